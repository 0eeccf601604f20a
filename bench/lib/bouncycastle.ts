/**
 * BouncyCastle 1.72's streaming CMS parsers as a bench baseline: bench/lib/java/BcStream.java,
 * compiled with javac against the Debian jars into a directory at bench start, one JVM serving
 * every job of the run (its start-up and JIT warm-up stay out of the figures), timed inside the
 * JVM from opening the file to the last byte counted (and, for SignedData, the signature checked).
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const JARS = ['bcprov', 'bcpkix', 'bcutil'].map((j) => `/usr/share/java/${j}.jar`);
const SOURCE = fileURLToPath(new URL('java/BcStream.java', import.meta.url));

/** One job's answer: seconds in the JVM, content bytes counted, the signature's verdict. */
export interface BcJob {
  seconds: number;
  bytes: number;
  /** SignedData: every signer verified; EnvelopedData: null. */
  verified: boolean | null;
}

/** A running BcStream JVM; jobs run one at a time. */
export interface BcStream {
  pid: number;
  /** Decrypts an EnvelopedData or verifies a SignedData into a counting sink. */
  run(kind: 'envelope' | 'signed', file: string): Promise<BcJob>;
  stop(): Promise<void>;
}

/** Compiles BcStream into `dir` and starts it with the recipient key at `keyPem` (PKCS#8 PEM). */
export function startBcStream(dir: string, keyPem: string): BcStream {
  execFileSync('/usr/bin/javac', ['-d', dir, '-cp', JARS.join(':'), SOURCE], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const jvm = spawn('/usr/bin/java', ['-cp', [dir, ...JARS].join(':'), 'BcStream', keyPem], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const answers = createInterface({ input: jvm.stdout })[Symbol.asyncIterator]();
  return {
    pid: jvm.pid!,
    async run(kind, file) {
      jvm.stdin.write(`${kind} ${file}\n`);
      const { value, done } = await answers.next();
      const m = done ? null : /^ok (\d+) ([\d.E-]+) (true|false|-)$/.exec(value as string);
      if (!m) throw new Error(`BcStream ${kind} ${file}: ${done ? 'the JVM exited' : value}`);
      return {
        bytes: Number(m[1]),
        seconds: Number(m[2]),
        verified: m[3] === '-' ? null : m[3] === 'true',
      };
    },
    async stop() {
      if (jvm.exitCode !== null || jvm.signalCode !== null) return;
      jvm.stdin.end();
      await once(jvm, 'exit');
    },
  };
}
