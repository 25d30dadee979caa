/**
 * Node.js 18 calls Ed25519 in Web Crypto experimental and says so on stderr at each `wap cert
 * tls`; from Node.js 20 on it says nothing. wap's stderr is its own messages: that one warning
 * is left out, every other is printed as Node.js prints it.
 *
 * @module
 */
const ed25519Experimental = /^The Ed25519 Web Crypto API algorithm is an experimental feature/;

export function leaveOutEd25519Warning(): void {
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === "string" ? warning : warning.message;
    if (ed25519Experimental.test(text)) return;
    emit(warning, ...rest);
  }) as typeof process.emitWarning;
}
