import { execFileSync } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TlsCertificate {
  /** The folder holding the files; the caller removes it. */
  dir: string;
  certPath: string;
  keyPath: string;
  /** The certificate itself, for clients to trust (it is its own authority). */
  ca: Buffer;
}

/** A self-signed P-256 certificate for localhost and 127.0.0.1, made by openssl in a new folder. */
export async function selfSignedLocalhostCertificate(prefix: string): Promise<TlsCertificate> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const certPath = join(dir, "cert.pem");
  const keyPath = join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      keyPath,
      "-out",
      certPath,
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ],
    { stdio: "ignore" },
  );
  return { dir, certPath, keyPath, ca: await readFile(certPath) };
}
