/**
 * step-ca, the peer of the issuance benchmark (issuance.ts): smallstep's CA built from the
 * sources Debian ships (`golang-github-smallstep-certificates-dev`, 0.19 in bookworm) with
 * Debian's Go (`golang-go`), offline (GOPATH mode over /usr/share/gocode, no module proxy). Debian
 * packages the library only, so bench/step-ca/main.go is the command, as upstream's cmd/step-ca
 * starts it.
 *
 * It runs with a root made by openssl (also its intermediate), an Ed25519 SSH user CA key, its
 * badger database (synchronous writes, badger's default) and one JWK provisioner with the SSH CA
 * enabled. Each request is `POST /1.0/ssh/sign` with its own one-time token (an ES256 JWT, as
 * `step ssh certificate` makes), minted before the run: step-ca refuses a token used twice.
 *
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createPrivateKey, generateKeyPairSync, randomUUID, sign } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { RequestSpec } from "./http2-load.js";
import { freePort, selfSignedCertificate, stopChild, waitReady } from "./issuance.js";
import { ed25519PublicKeyLine } from "./ssh-key.js";

export interface StepCa {
  readonly pid: number;
  readonly url: string;
  readonly spec: RequestSpec;
  stop(): Promise<void>;
}

const gocode = "/usr/share/gocode";
const source = join(gocode, "src/github.com/smallstep/certificates");
const command = join(dirname(fileURLToPath(import.meta.url)), "step-ca");
/** Where the built binary and Go's build cache are kept between runs. */
const buildDir = join(tmpdir(), "wap-bench-step-ca");
const binary = join(buildDir, "step-ca");

/** Why step-ca cannot run here, or undefined when it can (after building it once, a few minutes). */
export function stepCaUnavailable(): string | undefined {
  if (existsSync(binary)) return undefined;
  if (!existsSync(source)) {
    return "its sources are not installed (Debian: apt-get install golang-github-smallstep-certificates-dev golang-go)";
  }
  try {
    execFileSync("go", ["version"], { stdio: "ignore" });
  } catch {
    return "Go is not installed (Debian: apt-get install golang-go)";
  }
  try {
    buildStepCa();
    return undefined;
  } catch (error) {
    return `it did not build offline from Debian's sources: ${String(error).slice(0, 500)}`;
  }
}

function buildStepCa(): void {
  const gopath = join(buildDir, "gopath");
  const main = join(gopath, "src/stepca-bench");
  mkdirSync(main, { recursive: true });
  copyFileSync(join(command, "main.go"), join(main, "main.go"));
  console.log("building step-ca from Debian's sources (once; a few minutes)");
  execFileSync("go", ["build", "-o", binary, "stepca-bench"], {
    cwd: main,
    stdio: ["ignore", "ignore", "pipe"],
    env: {
      ...process.env,
      GO111MODULE: "off",
      GOPATH: `${gopath}:${gocode}`,
      GOPROXY: "off",
      GOFLAGS: "",
      GOCACHE: join(buildDir, "cache"),
    },
  });
}

/** Starts step-ca in `dir` with `tokens` one-time tokens for its requests. */
export async function startStepCa(dir: string, options: { tokens: number }): Promise<StepCa> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const { cert: root, key: rootKey } = selfSignedCertificate(dir, {
    name: "root",
    ca: true,
    subject: "bench root",
  });
  const sshUserKey = join(dir, "ssh_user_ca_key");
  writeFileSync(
    sshUserKey,
    generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }) as string,
    { mode: 0o600 },
  );
  const jwk = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const kid = "bench-key";
  const publicJwk = { ...jwk.publicKey.export({ format: "jwk" }), use: "sig", alg: "ES256", kid };
  const config = {
    root,
    crt: root,
    key: rootKey,
    address: `127.0.0.1:${port}`,
    dnsNames: ["localhost", "127.0.0.1"],
    logger: { format: "json" },
    db: { type: "badger", dataSource: join(dir, "db") },
    ssh: { userKey: sshUserKey },
    authority: {
      provisioners: [{ type: "JWK", name: "bench", key: publicJwk, claims: { enableSSHCA: true } }],
    },
    tls: {
      minVersion: 1.3,
      maxVersion: 1.3,
      renegotiation: false,
      cipherSuites: ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"],
    },
  };
  const configFile = join(dir, "ca.json");
  writeFileSync(configFile, JSON.stringify(config, null, 2));

  const log = openSync(join(dir, "step-ca.log"), "a");
  const url = `https://localhost:${port}`;
  const child: ChildProcess = spawn(binary, [configFile], {
    cwd: dir,
    stdio: ["ignore", log, log],
    env: { ...process.env, STEPPATH: dir, HOME: dir },
  });
  const ca = readFileSync(root, "utf8");
  await waitReady(url, ca, child, "/health");
  // Minted once it runs: step-ca refuses a token issued before it started.
  const publicKey = ed25519PublicKeyLine("bench@platform").split(" ")[1]!;
  const audience = `${url}/1.0/ssh/sign`;
  const signingKey = createPrivateKey(jwk.privateKey.export({ type: "pkcs8", format: "pem" }));
  const bodies = Array.from({ length: options.tokens }, () =>
    JSON.stringify({
      publicKey,
      ott: oneTimeToken(signingKey, kid, audience),
      certType: "user",
      keyID: "bench@platform",
      principals: ["bench"],
      validBefore: "1h",
    }),
  );

  return {
    pid: child.pid!,
    url,
    spec: {
      method: "POST",
      path: "/1.0/ssh/sign",
      headers: { "content-type": "application/json" },
      bodies,
      ca,
    },
    stop: () => stopChild(child),
  };
}

const base64url = (value: string | Buffer) => Buffer.from(value).toString("base64url");

/** A JWK provisioner's token for one SSH user certificate, as `step ssh certificate` makes it. */
function oneTimeToken(key: ReturnType<typeof createPrivateKey>, kid: string, audience: string): string {
  const now = Math.ceil(Date.now() / 1000);
  const header = base64url(JSON.stringify({ alg: "ES256", kid, typ: "JWT" }));
  const payload = base64url(
    JSON.stringify({
      iss: "bench",
      sub: "bench@platform",
      aud: audience,
      nbf: now,
      iat: now,
      exp: now + 900,
      jti: randomUUID(),
      step: { ssh: { certType: "user", keyID: "bench@platform", principals: ["bench"] } },
    }),
  );
  const signature = sign("sha256", Buffer.from(`${header}.${payload}`), { key, dsaEncoding: "ieee-p1363" });
  return `${header}.${payload}.${base64url(signature)}`;
}
