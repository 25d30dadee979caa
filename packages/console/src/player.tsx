/** Plays an asciicast recording in the page (asciinema-player, loaded only here). */
import * as AsciinemaPlayer from "asciinema-player";
import "asciinema-player/dist/bundle/asciinema-player.css";
import { useEffect, useRef, useState } from "react";
import { errorMessage } from "./api";
import { type RecordingFiles, recordingFiles } from "./recording-files";
import { recordingText } from "./recordings";

export default function Player({ workspaceId, recordingId }: { workspaceId: string; recordingId: string }) {
  const host = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<unknown>();
  const [files, setFiles] = useState<RecordingFiles>();
  useEffect(() => {
    let player: AsciinemaPlayer.Player | undefined;
    let gone = false;
    recordingText(workspaceId, recordingId).then(
      (text) => {
        if (gone) return;
        setFiles(recordingFiles(text));
        player = AsciinemaPlayer.create({ data: text }, host.current!, {
          fit: "width",
          idleTimeLimit: 2,
          autoPlay: true,
        });
      },
      (failure: unknown) => setError(failure),
    );
    return () => {
      gone = true;
      player?.dispose();
    };
  }, [workspaceId, recordingId]);
  return (
    <>
      {error !== undefined && (
        <p className="error" role="alert">
          {errorMessage(error)}
        </p>
      )}
      <div ref={host} className="player" data-testid="player" />
      {files?.summary !== undefined && (
        <section aria-label="Files read and written">
          <p>sftp: {files.summary}</p>
          <ul>
            {files.files.map((file, i) => (
              // The same file can appear twice (opened twice): the position keeps them apart.
              // biome-ignore lint/suspicious/noArrayIndexKey: the list never reorders
              <li key={i}>{file}</li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}
