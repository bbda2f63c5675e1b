// `rocm-tensor serve`: flags checked before loading (errors name the flag); it listens at once,
// serves once loaded, logs one line per request, and on SIGTERM finishes and exits with 0.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FOLDERS, writeModelFolder } from '../fixtures/model-folders.ts';

const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-cli-serve-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const bun = typeof (process.versions as Record<string, string | undefined>).bun === 'string';
const argv = (args: string[]) => (bun ? [CLI, ...args] : ['--import', 'tsx', CLI, ...args]);
const env = { ...process.env, ROCM_TENSOR_DEVICE: 'cpu' };

test('flag errors name the flag, before anything is loaded', async () => {
  const { dir } = await writeModelFolder(root, FOLDERS[1]!);
  const cases: [string[], string][] = [
    [['--port', '70000'], '--port must be at most 65535'],
    [['--max-batch', '0'], "--max-batch must be an integer >= 1, got '0'"],
    [['--kv-memory', '-1'], '--kv-memory must be GiB (> 1) or a fraction in (0, 1]'],
  ];
  for (const [flags, want] of cases) {
    const r = spawnSync(process.execPath, argv(['serve', dir, '--device', 'cpu', ...flags]), { encoding: 'utf8', env });
    assert.ok(r.status !== 0 && r.stderr.includes(want), `${flags.join(' ')}: ${r.stderr}`);
  }
});

test('serves, logs each request, and exits with 0 on SIGTERM', async () => {
  const { dir } = await writeModelFolder(root, FOLDERS[1]!);
  const p = spawn(process.execPath, argv(['serve', dir, '--port', '0', '--device', 'cpu', '--max-seq-len', '64']), {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  p.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((r) => p.on('exit', (code) => r(code)));
  try {
    const wait = async (re: RegExp) => {
      for (let i = 0; i < 300 && !re.test(err); i++) await new Promise((r) => setTimeout(r, 50));
      const m = re.exec(err);
      assert.ok(m, `${re} in: ${err}`);
      return m!;
    };
    const base = (await wait(/listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/))[1]!;
    await wait(/ready: llama in f32/);
    const r = await fetch(`${base}/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'the cat', max_tokens: 3, temperature: 0 }),
    });
    assert.is(r.status, 200);
    const body = (await r.json()) as { choices: { text: string }[]; usage: { completion_tokens: number } };
    assert.ok(body.usage.completion_tokens >= 1);
    await wait(
      /cmpl-[0-9a-f]+ POST \/v1\/completions 200 prompt=\d+ completion=\d+ cached=0 ttft=[\d.]+ms duration=[\d.]+ms finish=/,
    );
    p.kill('SIGTERM');
    assert.is(await exited, 0, err);
    assert.ok(err.includes('SIGTERM: finishing the running requests'), err);
    assert.ok(err.includes('stopped'), err);
  } finally {
    if (p.exitCode === null) p.kill('SIGKILL');
  }
});

test.run();
