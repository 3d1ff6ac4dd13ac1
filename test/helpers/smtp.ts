// A real SMTP receiver on 127.0.0.1 (the `smtp-server` package) that records every accepted
// message with its envelope, parsed headers and raw text, and can refuse recipients.
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';

export interface Mail {
  from: string;
  to: string[];
  raw: string;
  /** Header names lower-cased, folded lines joined. */
  headers: Record<string, string>;
  body: string;
  /** When the receiver accepted it (epoch ms). */
  receivedAt: number;
}

/** Refuse a recipient: an SMTP code (e.g. 550 permanent, 451 temporary), or undefined to accept. */
export type Refuse = (rcpt: string) => number | undefined;

export interface SmtpReceiver {
  port: number;
  url: string;
  mails: Mail[];
  refuse: Refuse;
  /** Wait before accepting each message (keeps concurrent senders overlapping). */
  delayMs: number;
  /** Never answer the message's DATA (a server that hangs after receiving it). */
  hang: boolean;
  /** Mails per Message-ID header. */
  counts(): Map<string, number>;
  close(): Promise<void>;
}

export function parseMail(raw: string): { headers: Record<string, string>; body: string } {
  const cut = raw.indexOf('\r\n\r\n');
  const head = cut === -1 ? raw : raw.slice(0, cut);
  const headers: Record<string, string> = {};
  let last = '';
  for (const line of head.split('\r\n')) {
    if (/^[ \t]/.test(line) && last) { headers[last] += ' ' + line.trim(); continue; }
    const i = line.indexOf(':');
    if (i <= 0) continue;
    last = line.slice(0, i).toLowerCase();
    headers[last] = line.slice(i + 1).trim();
  }
  return { headers, body: cut === -1 ? '' : raw.slice(cut + 4) };
}

export async function startSmtp(port = 0, refuse: Refuse = () => undefined): Promise<SmtpReceiver> {
  const r: SmtpReceiver = {
    port: 0, url: '', mails: [], refuse, delayMs: 0, hang: false,
    counts() {
      const m = new Map<string, number>();
      for (const x of r.mails) { const id = x.headers['message-id'] ?? ''; m.set(id, (m.get(id) ?? 0) + 1); }
      return m;
    },
    close: async () => {},
  };
  const server = new SMTPServer({
    authOptional: true, disabledCommands: ['STARTTLS'], logger: false, banner: 'headwater test receiver',
    // Idle pooled client connections would otherwise hold close() for 30 s.
    closeTimeout: 100,
    onRcptTo(address, _session, cb) {
      const code = r.refuse(address.address);
      if (code === undefined) return cb();
      const err = new Error(code >= 500 ? 'mailbox unavailable' : 'try again later') as Error & { responseCode: number };
      err.responseCode = code;
      cb(err);
    },
    onData(stream, session, cb) {
      const parts: Buffer[] = [];
      stream.on('data', (c: Buffer) => parts.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(parts).toString('utf8');
        r.mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((a) => a.address), raw, ...parseMail(raw), receivedAt: Date.now(),
        });
        if (r.hang) return;
        if (r.delayMs > 0) setTimeout(() => cb(), r.delayMs); else cb();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => { server.off('error', reject); resolve(); });
  });
  r.port = (server.server.address() as AddressInfo).port;
  r.url = `smtp://127.0.0.1:${r.port}`;
  r.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return r;
}
