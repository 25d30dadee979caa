/**
 * State kept once per platform instance (the retired-key cache). `Services` has no slot
 * for it, and each call sees its own copy of `services` (with a watched storage), so the key store,
 * which `createPlatform` takes once and shares with every call, stands for the instance.
 *
 * @module
 */
import type { Services } from "../../operations/services.js";

/** A value per platform instance, made on first use. */
export function perPlatform<T extends object>(make: () => T): (services: Pick<Services, "keyStore">) => T {
  const values = new WeakMap<object, T>();
  return (services) => {
    let value = values.get(services.keyStore);
    if (value === undefined) {
      value = make();
      values.set(services.keyStore, value);
    }
    return value;
  };
}
