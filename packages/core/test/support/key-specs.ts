/**
 * The key specs the SSH tests cover with the real tools: every CA kind (RSA at both ends of its
 * sizes), and every subject key kind with RSA at 2048 only (larger keys add generation time, not
 * coverage: the encoder does not depend on the subject key's size).
 */
import { allCaKeySpecs, type CaKeySpec } from "../../src/crypto/key-types.js";

export const sshCaKeySpecs: readonly CaKeySpec[] = allCaKeySpecs.filter(
  (spec) => spec.type !== "rsa" || spec.bits !== 3072,
);

export const sshSubjectKeySpecs: readonly CaKeySpec[] = allCaKeySpecs.filter(
  (spec) => spec.type !== "rsa" || spec.bits === 2048,
);
