import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { TargetSchema } from "@wap/api";
import { toPrincipalMessage } from "../principals/subjects.js";
import type { PrincipalGrantsRecord } from "../storage/principals.js";
import type { TargetRecord } from "../storage/targets.js";

/** The API's view of a target, with the principals given (those of the target, or a subset). */
export function toTargetMessage(
  target: TargetRecord,
  principals: readonly PrincipalGrantsRecord[],
): MessageInitShape<typeof TargetSchema> {
  return {
    id: target.id,
    workspaceId: target.workspaceId,
    caId: target.caId,
    daemonId: target.daemonId ?? "",
    name: target.name,
    description: target.description,
    tags: [...target.tags],
    endpoints: [...target.endpoints],
    principals: principals.filter((p) => p.targetId === target.id).map(toPrincipalMessage),
    metadata: { ...target.metadata },
    createdAt: timestampFromDate(target.createdAt),
    updatedAt: timestampFromDate(target.updatedAt),
    reportedEndpoints: [...(target.reportedEndpoints ?? [])],
  };
}
