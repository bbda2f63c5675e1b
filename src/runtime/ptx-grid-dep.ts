// Programmatic dependent launch from compute_80 PTX (NVIDIA sm_90 and later). Every kernel's first
// statement is compat.h's RT_GRID_DEP marker, a PTX comment; on a device that has
// griddepcontrol, the module is loaded with each marker replaced by a wait for the grid queued
// before it (and that grid's memory), and the target raised to the device. Such a kernel may
// then be launched without the stream's full serialization (cuda.ts: the launch attribute), so
// the GPU sets it up while the kernel ahead of it finishes. A kernel qualifies only where its
// marker comes before its first global memory access in the PTX text; any other kernel keeps
// the ordinary launch.

export const GRID_DEP_MARKER = '// rt-grid-dep';
// only the wait: kernels that also let the next one start at once (launch_dependents) measured
// no faster on an H200
const REPLACEMENT = 'griddepcontrol.wait;';
// loads, stores, atomics and asynchronous copies that may reach global memory (generic
// addressing included); parameter, shared and local ones cannot
const GLOBAL_ACCESS =
  /\b(?:ld|st|atom|red|prefetch)(?!\.(?:param|shared|local|const)\b)\.|\bcp\.async\b|\bcp\.reduce\b/;

export interface GridDepPtx {
  /** the PTX to load: markers replaced, target raised */
  readonly text: string;
  /** the entries whose marker precedes every global access: these may launch early */
  readonly entries: ReadonlySet<string>;
}

/** sm_XY -> XY (90 for sm_90, 100 for sm_100); NaN for anything else */
const smNumber = (arch: string): number => {
  const m = /^sm_(\d+)a?$/.exec(arch);
  return m ? Number(m[1]) : NaN;
};

/** whether `arch` has griddepcontrol (sm_90 and later) */
export const hasGridDep = (arch: string): boolean => smNumber(arch) >= 90;

/**
 * `ptx` rewritten for `arch` (sm_90 or later), or null where it has no marker or its PTX
 * version is older than griddepcontrol's (7.8).
 */
export function gridDepPtx(ptx: string, arch: string): GridDepPtx | null {
  if (!ptx.includes(GRID_DEP_MARKER) || !hasGridDep(arch)) return null;
  const ver = /^\s*\.version\s+(\d+)\.(\d+)/m.exec(ptx);
  if (!ver || Number(ver[1]) * 10 + Number(ver[2]) < 78) return null;
  const entries = new Set<string>();
  const heads = [...ptx.matchAll(/\.entry\s+([A-Za-z_$][\w$]*)\s*\(/g)];
  heads.forEach((h, i) => {
    const body = ptx.slice(h.index!, i + 1 < heads.length ? heads[i + 1]!.index : ptx.length);
    const mark = body.indexOf(GRID_DEP_MARKER);
    if (mark < 0) return;
    // the body starts after the parameter list; only accesses there count
    const open = body.indexOf('{');
    const access = body.slice(open).search(GLOBAL_ACCESS);
    if (mark > open && (access < 0 || open + access > mark)) entries.add(h[1]!);
  });
  const text = ptx
    .replace(/^(\s*\.target\s+)sm_\d+a?/m, `$1${arch}`)
    .split(GRID_DEP_MARKER)
    .join(REPLACEMENT);
  return { text, entries };
}
