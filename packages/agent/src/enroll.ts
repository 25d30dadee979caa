/**
 * `wap-agent enroll`: registers this machine's agent with a workspace.
 *
 * The key is created on first use and kept. An agent that already has an enrolment signs its
 * EnrollDaemon call: the server then answers `already_exists` (the daemon is enrolled, whatever
 * the token) and the enrolment is kept, so running `enroll` twice changes nothing. An agent
 * whose daemon was deleted on the server signs with an id the server no longer knows: the token
 * decides, and the new ids replace the old ones. A name (`--name`) is sent as the daemon's host
 * name, from which the server derives the daemon's and target's names.
 *
 * @module
 */

import type { DaemonStatus } from "@wap/api";
import { Code, ConnectError } from "@wap/client";
import { connect } from "./connection.js";
import { machineHostname } from "./machine.js";
import { AgentState, type Enrolment, publicKeyPem } from "./state.js";

export interface EnrollOptions {
  readonly server: string;
  readonly token: string;
  readonly stateDir: string;
  readonly name?: string;
  /** The SSH authority the target trusts, by name or id; unset: the workspace's default. */
  readonly ca?: string;
}

export interface EnrollResult {
  readonly enrolment: Enrolment;
  /** False when the machine was already enrolled (nothing changed). */
  readonly created: boolean;
  /** The daemon's status as the server gave it (PENDING until an administrator accepts it). */
  readonly status: DaemonStatus | undefined;
}

const enrollTimeoutMs = 30_000;

export async function enroll(options: EnrollOptions): Promise<EnrollResult> {
  const server = new URL(options.server).toString().replace(/\/$/, "");
  const state = new AgentState(options.stateDir);
  await state.prepare();
  const key = await state.signingKey();
  const existing = await state.readEnrolment();
  if (existing && existing.server !== server) {
    throw new Error(
      `this machine is enrolled with ${existing.server}; remove ${state.enrolmentFile} to enrol it with ${server}`,
    );
  }
  const client = connect({
    server,
    key,
    hostname: options.name ?? machineHostname(),
    ...(existing && { daemonId: existing.daemonId }),
  });
  try {
    const res = await client.daemons.enrollDaemon(
      { token: options.token, caId: options.ca ?? "", authMethod: "soft", authPubkey: publicKeyPem(key) },
      { timeoutMs: enrollTimeoutMs },
    );
    if (!res.id || !res.workspaceId || !res.targetId) {
      throw new Error("the server's enrolment answer lacks a daemon, workspace or target id");
    }
    const enrolment: Enrolment = {
      server,
      daemonId: res.id,
      workspaceId: res.workspaceId,
      targetId: res.targetId,
      enrolledAt: new Date().toISOString(),
    };
    await state.writeEnrolment(enrolment);
    return { enrolment, created: true, status: res.status };
  } catch (error) {
    if (existing && error instanceof ConnectError && error.code === Code.AlreadyExists) {
      return { enrolment: existing, created: false, status: undefined };
    }
    throw error;
  } finally {
    client.close();
  }
}
