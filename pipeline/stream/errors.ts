// The one failure the front end must tell apart: the stream could not durably take the calls (or
// did not answer in time), so the caller gets 503 and may retry; nothing was promised.
export class StreamUnavailableError extends Error {
  constructor(message = 'the ingestion stream is unavailable') {
    super(message);
    this.name = 'StreamUnavailableError';
  }
}
