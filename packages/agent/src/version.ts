/** The agent's version, as `--version` prints it and `Platform-Daemon-Version` sends it. */
export const agentVersion = "0.1.0";
