/**
 * SIGHUP reloads the TLS certificate and key (a renewal): new connections get the new
 * certificate, connections already open keep working, and the process keeps running.
 */
import { X509Certificate } from "node:crypto";
import { copyFile, rm } from "node:fs/promises";
import http2 from "node:http2";
import tls from "node:tls";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServerProcess } from "./support/server-process.js";
import { selfSignedLocalhostCertificate, type TlsCertificate } from "./support/tls-certificate.js";

/** The fingerprint of the certificate a new TLS connection is served. */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect(
      { host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["h2"] },
      () => {
        resolve(socket.getPeerX509Certificate()!.fingerprint256);
        socket.end();
      },
    );
    socket.once("error", reject);
  });
}

function get(session: http2.ClientHttp2Session, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":path": path });
    stream.once("response", (headers) => resolve(Number(headers[":status"])));
    stream.once("error", reject);
    stream.resume();
  });
}

describe("SIGHUP", () => {
  let first: TlsCertificate;
  let second: TlsCertificate;
  let served: TlsCertificate;
  let server: ServerProcess;
  beforeAll(async () => {
    [first, second, served] = await Promise.all([
      selfSignedLocalhostCertificate("wap-tls-a-"),
      selfSignedLocalhostCertificate("wap-tls-b-"),
      selfSignedLocalhostCertificate("wap-tls-served-"),
    ]);
    await copyFile(first.certPath, served.certPath);
    await copyFile(first.keyPath, served.keyPath);
    server = await startServerProcess({
      WAP_PORT: "0",
      WAP_DATA_DIR: `${served.dir}/data`,
      WAP_TLS_CERT: served.certPath,
      WAP_TLS_KEY: served.keyPath,
    });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    for (const cert of [first, second, served]) await rm(cert.dir, { recursive: true, force: true });
  });

  it("reloads the certificate without dropping open connections or stopping", async () => {
    const port = Number(new URL(server.url).port);
    const fingerprint = (cert: TlsCertificate) => new X509Certificate(cert.ca).fingerprint256;
    expect(await servedFingerprint(port)).toBe(fingerprint(first));
    const open = http2.connect(server.url, { ca: first.ca });
    try {
      expect(await get(open, "/healthz")).toBe(200);

      // A renewal: the files are replaced, then the process is told.
      await copyFile(second.certPath, served.certPath);
      await copyFile(second.keyPath, served.keyPath);
      process.kill(server.child.pid!, "SIGHUP");
      await until(() => server.output().includes("TLS certificate reloaded"));

      expect(await servedFingerprint(port)).toBe(fingerprint(second));
      // The connection opened before the reload still serves requests.
      expect(await get(open, "/healthz")).toBe(200);
      expect(server.child.exitCode).toBeNull();

      // A pair that does not match is refused, and the certificate in use stays.
      await copyFile(first.certPath, served.certPath);
      process.kill(server.child.pid!, "SIGHUP");
      await until(() => server.output().includes("TLS reload failed"));
      expect(await servedFingerprint(port)).toBe(fingerprint(second));
      expect(server.child.exitCode).toBeNull();
    } finally {
      open.close();
    }
  }, 60_000);
});
