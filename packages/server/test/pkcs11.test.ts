/**
 * The server's PKCS#11 settings on a real SoftHSM2 token: with WAP_PKCS11_MODULE,
 * WAP_PKCS11_TOKEN_LABEL and a PIN file, CreateCertificateAuthority over REST makes an authority
 * whose key is in the token and which signs; without a token the same request is
 * FAILED_PRECONDITION naming the settings; a wrong PIN stops the start with the reason.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer } from "@wap/test-kit/server";
import { createSoftHsmToken, type SoftHsmToken } from "@wap/test-kit/softhsm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/config.js";

let hsm: SoftHsmToken;
let pinFile: string;

beforeAll(async () => {
  hsm = await createSoftHsmToken("wap-server");
  pinFile = join(hsm.dir, "pin");
  await writeFile(pinFile, `${hsm.pin}\n`, { mode: 0o600 });
});
afterAll(() => hsm?.remove());

const createCa = (url: string, owner: { workspaceId: string; accessToken: string }) =>
  restCall(
    url,
    "POST",
    `/v1/workspaces/${owner.workspaceId}/certificate_authorities`,
    { name: "hsm", keyType: "CERTIFICATE_KEY_TYPE_ECDSA", keyStorage: "KEY_STORAGE_PKCS11" },
    { token: owner.accessToken },
  );

describe("CA keys in the token the settings name", () => {
  it("creates a PKCS#11 authority that signs, with the token from WAP_PKCS11_* and a PIN file", async () => {
    const server = await startTestServer({
      pkcs11Module: hsm.module,
      pkcs11TokenLabel: hsm.tokenLabel,
      pkcs11PinFile: pinFile,
    });
    try {
      const owner = await signUpWithWorkspace(server.url);
      const res = await createCa(server.url, owner);
      expect(res.status).toBe(200);
      const ca = res.body.certificateAuthority as { id: string; keyStorage: string };
      expect(ca.keyStorage).toBe("KEY_STORAGE_PKCS11");
      const record = await server.platform.services.storage.certificateAuthorities.findById(
        owner.workspaceId,
        ca.id,
      );
      expect(new TextDecoder().decode(record!.sealedPrivateKey)).toMatch(/^pkcs11:object=wap-ca-/);
    } finally {
      await server.close();
    }
  });

  it("answers FAILED_PRECONDITION naming the settings when the server has no token", async () => {
    const server = await startTestServer();
    try {
      const owner = await signUpWithWorkspace(server.url);
      const res = await createCa(server.url, owner);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe(9);
      expect(res.body.message).toContain("WAP_PKCS11_MODULE");
    } finally {
      await server.close();
    }
  });

  it("refuses to start with a wrong PIN or a partial setting, saying why", async () => {
    await expect(
      startTestServer({ pkcs11Module: hsm.module, pkcs11TokenLabel: hsm.tokenLabel, pkcs11Pin: "0000" }),
    ).rejects.toThrow(/cannot log in to the PKCS#11 token "wap-server"/);
    expect(() => parseConfig([], { WAP_PKCS11_MODULE: hsm.module })).toThrow(/WAP_PKCS11_TOKEN_LABEL/);
    expect(() => parseConfig([], { WAP_PKCS11_MODULE: hsm.module, WAP_PKCS11_TOKEN_LABEL: "x" })).toThrow(
      /exactly one of WAP_PKCS11_PIN and WAP_PKCS11_PIN_FILE/,
    );
  });
});
