/** The SSH wire encoding of RFC 4251 (uint32, string, mpint): from @wap/ssh-wire. */
export { SshReader, SshWriter } from "@wap/ssh-wire";
