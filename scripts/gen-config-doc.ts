// Writes docs/configuration.md from the table of environment variables in src/core/config.ts
// (npm run docs:config). test/cpu/config.test.ts fails when the committed file differs from what
// this renders, so the table stays the one place a variable is declared.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENV_VARS, acceptedValues, type EnvSection, type EnvVar } from '../src/core/config.ts';

export const CONFIG_DOC_PATH = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));

const SECTIONS: Record<EnvSection, { readonly title: string; readonly intro: string }> = {
  general: {
    title: 'Settings',
    intro: 'What a program or a user of the CLI may want to set.',
  },
  tuning: {
    title: 'Tuning',
    intro:
      'Overrides of choices the GPU backends make on their own, to compare variants on one shape or to rule one out. ' +
      'They change how the work is split and launched, not what is computed.',
  },
  libraries: {
    title: 'Native libraries',
    intro:
      'Each vendor library is found in this order: the path in its variable, then the folders of the next section ' +
      'and the usual install folders, then the system loader with the bare soname. rocBLAS, MIOpen, cuBLAS, cuDNN and ' +
      'the collectives libraries load on first use.',
  },
  search: {
    title: 'Library search paths',
    intro: 'Variables of other tools that the library search reads.',
  },
  distributed: {
    title: 'Distributed jobs',
    intro:
      "torchrun's variables: `rocm-tensor launch` sets them for each rank it starts (and LOCAL_WORLD_SIZE, which " +
      'nothing reads); initProcessGroup() reads them through distEnvFrom() unless given `env`. A missing or malformed ' +
      'one is a RendezvousError that names it.',
  },
  cli: {
    title: 'The command line',
    intro: "Colours of `rocm-tensor` (no-color.org's convention).",
  },
  development: {
    title: 'Test suites and scripts',
    intro: 'Read by the test suites and scripts of a source checkout, never by the library.',
  },
};

const cell = (s: string): string => s.replace(/\|/g, '\\|');
const code = (s: string): string => '`' + s + '`';

function row(v: EnvVar): string {
  const accepted =
    v.type === 'enum' || (v.type === 'int' && v.oneOf)
      ? (v.values ?? v.oneOf?.map(String) ?? []).map(code).join(', ')
      : acceptedValues(v);
  return `| ${code(v.name)} | ${v.type} | ${cell(accepted)} | ${cell(v.default)} | ${cell(v.description)} | ${cell(v.readBy)}: ${cell(v.when)} |`;
}

/** the whole of docs/configuration.md */
export function renderConfigDoc(): string {
  const out: string[] = [
    '# Configuration: environment variables',
    '',
    '<!-- generated from src/core/config.ts by `npm run docs:config`; edit the table there, not this file -->',
    '',
    'Every environment variable rocm-tensor reads, from the table in `src/core/config.ts`. An empty value reads as ' +
      'unset. A value that does not parse is an error when the variable is read (a `ConfigError` whose message names ' +
      'the variable and the values it accepts), never a silent fallback. Each variable is read at the moment its last ' +
      'column says, not when the library loads, so setting it in `process.env` before then still counts.',
    '',
    'Types: `flag` is `0` or `1`; `int` a whole number; `bytes` a byte count, plain or with a `k`, `m` or `g` suffix ' +
      '(binary units: `32m` is 33554432); `enum` one of the values listed; `path` a file or folder; `string` text.',
  ];
  for (const [section, { title, intro }] of Object.entries(SECTIONS) as [EnvSection, (typeof SECTIONS)[EnvSection]][]) {
    const vars = ENV_VARS.filter((v) => v.section === section);
    if (vars.length === 0) continue;
    out.push(
      '',
      `## ${title}`,
      '',
      intro,
      '',
      '| variable | type | values | unset | what it does | read by, when |',
      '|---|---|---|---|---|---|',
      ...vars.map((v) => row(v)),
    );
  }
  out.push(
    '',
    '## Variables the library sets',
    '',
    '- `rocm-tensor launch` starts each rank with `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`, ' +
      '`MASTER_ADDR` and `MASTER_PORT` added to its own environment.',
    '- initProcessGroup() sets `NCCL_RUNTIME_CONNECT=0` (for NCCL and RCCL: connect every peer while the communicator ' +
      'is made, not at the first collective) unless it is already set.',
    '',
  );
  return out.join('\n');
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  mkdirSync(dirname(CONFIG_DOC_PATH), { recursive: true });
  writeFileSync(CONFIG_DOC_PATH, renderConfigDoc());
  console.error(`wrote ${CONFIG_DOC_PATH}`);
}
