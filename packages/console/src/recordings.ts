import { api } from "./api";

/** The whole asciicast file of a recording, from the GetRecording stream. */
export async function recordingText(workspaceId: string, recordingId: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const message of api.recordings.getRecording({ workspaceId, recordingId })) {
    if (message.msg.case === "chunk") chunks.push(message.msg.value);
  }
  return new TextDecoder().decode(await new Blob(chunks as BlobPart[]).arrayBuffer());
}
