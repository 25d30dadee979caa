/**
 * The PKCS#11 token the settings name (WAP_PKCS11_MODULE, WAP_PKCS11_TOKEN_LABEL and
 * WAP_PKCS11_PIN or WAP_PKCS11_PIN_FILE), opened and logged in at start: a token that cannot be
 * used stops the start with the reason, rather than failing the first authority that needs it.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { openPkcs11Token, type Pkcs11Token, Pkcs11TokenError } from "@wap/core";
import type { ServerConfig } from "./config.js";
import { StartupError } from "./startup-error.js";

/** Opens the configured token; undefined when none is configured. */
export async function openConfiguredToken(config: ServerConfig): Promise<Pkcs11Token | undefined> {
  const { pkcs11Module, pkcs11TokenLabel, pkcs11PinFile } = config;
  if (pkcs11Module === undefined || pkcs11TokenLabel === undefined) return undefined;
  let pin = config.pkcs11Pin;
  if (pin === undefined && pkcs11PinFile !== undefined) {
    try {
      pin = (await readFile(pkcs11PinFile, "utf8")).replace(/\r?\n$/, "");
    } catch (error) {
      throw new StartupError(
        `cannot read WAP_PKCS11_PIN_FILE ${pkcs11PinFile}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
  try {
    return openPkcs11Token({ module: pkcs11Module, tokenLabel: pkcs11TokenLabel, pin: pin ?? "" });
  } catch (error) {
    if (error instanceof Pkcs11TokenError) throw new StartupError(error.message, { cause: error });
    throw error;
  }
}
