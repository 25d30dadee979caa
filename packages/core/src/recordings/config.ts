/**
 * Settings of session recording, part of `PlatformConfig`.
 *
 * @module
 */

/** The recording settings; every field has a documented default. */
export interface RecordingConfig {
  /**
   * The largest a recording's file may grow. Past it the recorder stops, ends the file with a
   * marker event saying so and flags the recording `truncated`; the session goes on.
   * Default 256 MiB (8 hours at about 9 KiB/s of terminal output).
   */
  readonly recordingMaxBytes: number;
  /**
   * How long recorded output may wait in memory before it is written, at most. Output is also
   * written whenever 64 KiB are waiting. Default 1000 ms.
   */
  readonly recordingFlushIntervalMs: number;
}

export const defaultRecordingConfig: RecordingConfig = {
  recordingMaxBytes: 256 * 1024 * 1024,
  recordingFlushIntervalMs: 1000,
};
