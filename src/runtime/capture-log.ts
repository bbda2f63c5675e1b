// Why a stream capture broke. A call that is forbidden while a stream captures (synchronizing
// it, a synchronous copy or anything else on the legacy NULL stream, which our blocking streams
// would have to wait for) fails with one of the stream-capture errors (900..908 on both vendors)
// and invalidates the capture; the end-of-capture call then only says "invalidated". Each
// runtime notes the first such failure per capture in progress, so captureEnd can name it.

export class CaptureLog {
  // raw stream -> the first capture-class failure seen since its capture began
  private readonly active = new Map<bigint, string | null>();

  /** `first`..`last`: the vendor's stream-capture error codes */
  constructor(
    private readonly first: number,
    private readonly last: number,
  ) {}

  begin(stream: bigint): void {
    this.active.set(stream, null);
  }

  /** whether `stream` is capturing */
  has(stream: bigint): boolean {
    return this.active.has(stream);
  }

  /** true when any stream of this runtime is capturing (cheap: failures are rare) */
  get capturing(): boolean {
    return this.active.size > 0;
  }

  /** records a failed call against every capture in progress, when its code is a capture error;
   *  the driver does not say which capture a failure broke, and usually it is the only one */
  noteFailure(code: number, what: string): void {
    if (code < this.first || code > this.last) return;
    for (const [s, cause] of this.active) if (cause === null) this.active.set(s, what);
  }

  /** forgets the capture of `stream` and returns its recorded cause (null when none was seen) */
  end(stream: bigint): string | null {
    const cause = this.active.get(stream) ?? null;
    this.active.delete(stream);
    return cause;
  }
}

/** the text of captureEnd's error when the driver reports the capture as invalidated */
export function invalidatedText(device: string, cause: string | null, endCall: string): string {
  const by =
    cause !== null
      ? `an earlier call that failed while it captured [${cause}]`
      : 'a call not permitted while a stream captures (synchronizing the stream or the device, ' +
        'a synchronous copy, or work on the legacy NULL stream); no failing call of this runtime was seen, so it ' +
        'came from elsewhere in the process';
  return `captureEnd on ${device}: the capture was invalidated by ${by}; ${endCall}`;
}
