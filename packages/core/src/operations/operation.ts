/**
 * How an operation is declared: the RPC it serves, who may call it, the schema of its input, and
 * the function that does the work. Authorization and validation happen before `run`, in one
 * place ({@link ../platform.ts}), never inside handlers.
 *
 * @module
 */
import type { DescMessage, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import type * as z from "zod";
import type { ConditionalPermission } from "../access/conditional.js";
import type { Permission } from "../access/permissions.js";
import type { AuditAction } from "../audit/actions.js";
import type { CallContext, CallerKind, WorkspaceRole } from "../context.js";
import type { DaemonChange } from "../daemons/change-notifications.js";
import type { AuditEventRecord } from "../storage/audit.js";
import type { Repositories } from "../storage/storage.js";
import type { Services } from "./services.js";

/** Who may call an operation. */
export type Access =
  /** Anyone, with or without credentials. */
  | {
      readonly kind: "public";
      /**
       * What a `Platform` challenge (a signed request) means here. `unchecked`: the edge does not
       * verify it (the CLI signs its login stream before its key is registered). `optional`: one
       * that fails leaves the call anonymous (a daemon whose record was deleted still signs with
       * its old id when it enrols again with a token: the token decides). Default: a failed
       * challenge refuses the call.
       */
      readonly signature?: "unchecked" | "optional";
      /**
       * The answer signs a browser in (sets the session cookie): a page of another site may not
       * call it, or it could sign a victim's browser into the attacker's account.
       */
      readonly signsIn?: true;
      /**
       * Browsers may send the credential in the `refresh` cookie instead of the body (the cookie is
       * sent to this RPC's Connect path only); it acts as its user, so the same origin rules apply
       * as to the session cookie.
       */
      readonly refreshCookie?: true;
    }
  /**
   * Only an enrolled daemon, signing the request with its key: the daemon's own streams. Others
   * are refused with words that name the `stream`.
   */
  | { readonly kind: "signed_daemon"; readonly stream: "control stream" | "session stream" }
  /** Any caller of the listed kinds; no workspace involved (e.g. Whoami, ListWorkspaces). */
  | { readonly kind: "caller"; readonly callers: readonly CallerKind[] }
  /**
   * A caller acting inside the workspace named by the request's `workspaceId` (or, for service
   * accounts and daemons that leave it out, their own), holding `permission` there.
   */
  | {
      readonly kind: "workspace";
      readonly permission: Permission;
      readonly callers?: readonly CallerKind[];
      /** Permissions needed beyond `permission` in some cases, checked by the handler. */
      readonly conditions?: readonly ConditionalPermission[];
    };

/** The workspace an operation runs in, as established by the access check. */
export interface WorkspaceScope {
  readonly workspaceId: string;
  /** The caller's role there (a daemon acts with no role: `null`). */
  readonly role: WorkspaceRole | null;
}

/** What an audit entry says beyond who, when and from where. */
export interface AuditEntry {
  /** e.g. `certificate_authority.create`. */
  readonly action: AuditAction;
  /** e.g. `certificate_authority:<id>`. */
  readonly resource: string;
  /** The workspace, when the operation has none in scope (e.g. CreateWorkspace). */
  readonly workspaceId?: string;
}

/** Everything `run` receives. */
export interface OperationCall<In> {
  readonly ctx: CallContext;
  readonly input: In;
  readonly services: Services;
  /** The time this call started, from the injected clock. */
  readonly now: Date;
  /** Set for operations with `workspace` access. */
  readonly workspace: WorkspaceScope;
  /** Records an audit event, in the same transaction as the change it describes. */
  audit(tx: Repositories, entry: AuditEntry): Promise<void>;
  /**
   * The audit event of `entry`, for an operation that writes it itself with `storage.append`
   * (group-committed with the change it describes). Call `committed()` once the append has
   * resolved: its workspace event then goes out like those of `audit`.
   */
  auditEvent(entry: AuditEntry): PendingAuditEvent;
}

/** An audit event to be written by the operation, and how to say it was. */
export interface PendingAuditEvent {
  readonly record: AuditEventRecord;
  committed(): void;
}

/** A unary operation of the platform. */
export interface Operation<
  I extends DescMessage = DescMessage,
  O extends DescMessage = DescMessage,
  In = unknown,
> {
  readonly method: DescMethodUnary<I, O>;
  readonly access: Access;
  readonly input: z.ZodType<In, unknown>;
  /**
   * The kinds of change this operation records (through `call.audit`) that concern daemons:
   * the daemons concerned are notified once `run` has resolved (./daemons/change-notifications.ts).
   */
  readonly notifiesDaemons?: readonly DaemonChange[];
  run(call: OperationCall<In>): Promise<MessageInitShape<O>>;
}

/** Declares an operation; the input type of `run` follows from the schema. */
export function defineOperation<
  I extends DescMessage,
  O extends DescMessage,
  S extends z.ZodType,
>(operation: {
  readonly method: DescMethodUnary<I, O>;
  readonly access: Access;
  readonly input: S;
  readonly notifiesDaemons?: readonly DaemonChange[];
  run(call: OperationCall<z.output<S>>): Promise<MessageInitShape<O>>;
}): Operation<I, O, z.output<S>> {
  return operation as Operation<I, O, z.output<S>>;
}

/** Any operation, whatever its message types. */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds operations of every shape.
export type AnyOperation = Operation<any, any, any>;
