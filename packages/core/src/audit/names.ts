/**
 * The names beside an audit entry's ids: who acted (a person's name and email, a service
 * account's or daemon's name) and what the resource is ("web-1", "Bob Babbage", "root on web-1").
 * Looked up when the log is read, so they are today's names; a resource since deleted has none.
 * One namer serves one listing or export and remembers every id it looked up.
 *
 * @module
 */
import type { AuditEventRecord } from "../storage/audit.js";
import type { Repositories } from "../storage/storage.js";

export interface AuditNames {
  readonly actorName: string;
  readonly actorEmail: string;
  readonly resourceName: string;
}

interface Named {
  readonly name: string;
  readonly email?: string;
}

type Lookup = (id: string) => Promise<Named | null>;

export type AuditNamer = (event: AuditEventRecord) => Promise<AuditNames>;

export function createAuditNamer(storage: Repositories, workspaceId: string): AuditNamer {
  const person: Lookup = async (id) => {
    const user = await storage.users.findById(id);
    return user && { name: user.name, email: user.email };
  };
  const lookups: Record<string, Lookup> = {
    user: person,
    member: person,
    service_account: async (id) => storage.serviceAccounts.findById(workspaceId, id),
    daemon: async (id) => storage.daemons.findById(workspaceId, id),
    target: async (id) => storage.targets.findById(workspaceId, id),
    team: async (id) => storage.teams.findById(workspaceId, id),
    certificate_authority: async (id) => storage.certificateAuthorities.findById(workspaceId, id),
    workspace: async (id) => (id === workspaceId ? storage.workspaces.findById(id) : null),
    domain: async (domain) => ({ name: domain }),
    // A terminal session, and its recording (the same id): who logged in as what, where.
    session: async (id) => sessionName(await storage.daemonSessions.findById(workspaceId, id)),
    recording: async (id) => sessionName(await storage.recordings.findById(workspaceId, id)),
    // An SSH login: who, as what, where, and how it ended.
    ssh_session: async (id) => {
      const login = await storage.sshSessions.findById(workspaceId, id);
      if (!login) return null;
      const subject =
        login.subjectType === "user"
          ? await storage.users.findById(login.subjectId)
          : await storage.serviceAccounts.findById(workspaceId, login.subjectId);
      const daemon = await storage.daemons.findById(workspaceId, login.daemonId);
      const what = login.kind === "shell" ? "ssh" : `ssh ${login.kind} ${JSON.stringify(login.command)}`;
      const end = login.endedAt ? `; ended: ${login.endReason}` : "";
      return {
        name: `${subject?.name ?? login.keyId} as ${login.username} on ${daemon?.name ?? "a deleted daemon"} (${what} from ${login.clientAddress || "?"})${end}`,
      };
    },
    principal: async (id) => {
      const principal = await storage.principals.findById(workspaceId, id);
      if (!principal) return null;
      const target = await storage.targets.findById(workspaceId, principal.targetId);
      return { name: `${principal.username} on ${target?.name ?? "a deleted target"}` };
    },
  };
  async function sessionName(session: { daemonId: string; username: string } | null): Promise<Named | null> {
    if (!session) return null;
    const daemon = await storage.daemons.findById(workspaceId, session.daemonId);
    return { name: `${session.username} on ${daemon?.name ?? "a deleted daemon"}` };
  }
  const known = new Map<string, Promise<Named | null>>();
  const uuidLike = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

  function named(kind: string, id: string): Promise<Named | null> {
    const lookup = lookups[kind];
    // Ids that are not uuids (an anonymous caller, a resource of another form) name nothing.
    if (!lookup || (kind !== "domain" && !uuidLike.test(id))) return Promise.resolve(null);
    const key = `${kind}:${id}`;
    let found = known.get(key);
    if (!found) {
      found = lookup(id).catch(() => null);
      known.set(key, found);
    }
    return found;
  }

  return async (event) => {
    const separator = event.resource.indexOf(":");
    const [actor, resource] = await Promise.all([
      named(event.actorType, event.actorId),
      separator > 0
        ? named(event.resource.slice(0, separator), event.resource.slice(separator + 1))
        : Promise.resolve(null),
    ]);
    return {
      actorName: actor?.name ?? "",
      actorEmail: actor?.email ?? "",
      resourceName: resource?.name ?? "",
    };
  };
}
