/**
 * WorkspaceService.SubscribeWorkspaceEvents: the events of one workspace, as they happen, on
 * whichever server instance the change was made (the bus carries them across). The stream
 * starts with the next event (no history: the audit log has that), and ends when the workspace
 * is deleted or the caller goes away.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { WorkspaceService } from "@wap/api";
import * as z from "zod";
import { uuid } from "../validation/rules.js";
import { defineStreamingOperation } from "./streaming-operation.js";
import { subscribeTopic } from "./topic-subscription.js";
import { workspaceDeletedType, workspaceEventOf, workspaceTopic } from "./workspace-events.js";

// Not bounded by the contract; bounded here so that a filter stays a filter.
const eventType = z.string().min(1).max(128);

export const subscribeWorkspaceEvents = defineStreamingOperation({
  method: WorkspaceService.method.subscribeWorkspaceEvents,
  access: { kind: "workspace", permission: "workspace.read" },
  input: z.object({ workspaceId: uuid.optional(), eventTypes: z.array(eventType).max(100) }),
  async *run({ input, workspace, services, ctx, ready }) {
    const wanted = new Set(input.eventTypes);
    const events = await subscribeTopic(services.events, workspaceTopic(workspace.workspaceId), ctx.signal);
    ready();
    for await (const payload of events) {
      const event = workspaceEventOf(payload);
      if (event === undefined) continue;
      if (wanted.size === 0 || wanted.has(event.type)) {
        yield {
          id: event.id,
          type: event.type,
          workspaceId: workspace.workspaceId,
          payloadJson: JSON.stringify({ resource: event.resource }),
          createdAt: timestampFromDate(new Date(event.createdAt)),
        };
      }
      if (event.type === workspaceDeletedType) return;
    }
  },
});
