// Reverse-mode autograd. The op registry calls record() after an op ran whenever a leaf tensor
// that requires a gradient is alive (one branch otherwise); record() saves the op's arguments as
// views (so disposing the inputs cannot free what backward needs), notes each saved storage's
// version (an in-place write after that is refused at backward), and ties the output to a node
// whose edges lead to the inputs' nodes or leaves. backward() walks the nodes in reverse
// topological order, calls each op's gradient rule (src/ops/grads.ts, written in other ops) with
// recording off, and accumulates into the leaves' .grad. Higher-order gradients are not supported.
import { TensorError } from '../core/errors.ts';
import { isFloatDType } from '../core/dtype.ts';
import { RawTensor } from '../device/raw-tensor.ts';
import type { Storage } from '../device/storage.ts';
import { type GradRule, gradRuleOf, setGradRecorder } from '../ops/registry.ts';
import { binary } from '../ops/elementwise.ts';
import { cat, copyInto } from '../ops/copy.ts';
import { full } from '../ops/creation.ts';

/** an input's way back: the node that made it, or the leaf itself */
type Edge = GradNode | GradLeaf;

/** what a tensor holds once it takes part in autograd (RawTensor.gradState) */
export interface GradState {
  /** the node that made this tensor; null for a leaf */
  readonly node: GradNode | null;
}

/** a leaf tensor that requires a gradient: where backward accumulates */
export interface GradLeaf {
  readonly gradState: GradState;
  grad: RawTensor | null;
  readonly isDisposed: boolean;
  readonly shape: number[];
}

/**
 * A narrow view's gradient as the base sees it: g in the region [start, start + len) of dim,
 * zeros elsewhere. Kept apart until the base's gradients are summed, so that a base split into
 * views (a fused projection's q, k and v) gets one copy a part, or their concatenation, rather
 * than a zero-filled base a part and the sums of those.
 */
export class RegionGrad {
  constructor(
    readonly shape: readonly number[],
    readonly dim: number,
    readonly start: number,
    readonly g: RawTensor,
  ) {}
  get len(): number {
    return this.g.layout.shape[this.dim]!;
  }
  dispose(): void {
    this.g.dispose();
  }
}
/** what a rule gives an input: its gradient, or a view's region of it */
type Part = RawTensor | RegionGrad;

/** one tensor's gradient parts, summed when the tensor's node runs (each owned here) */
class GradSum {
  private dense: RawTensor | null = null;
  private readonly regions: RegionGrad[] = [];
  add(p: Part): void {
    if (p instanceof RegionGrad) this.regions.push(p);
    else this.dense = accumulate(this.dense, p);
  }
  /** the sum (owned by the caller); the parts are consumed */
  take(): RawTensor {
    const regions = this.regions.splice(0);
    const dense = this.dense;
    this.dense = null;
    if (regions.length === 0) return dense!;
    let whole: RawTensor;
    try {
      whole = mergeRegions(regions);
    } catch (e) {
      dense?.dispose();
      throw e;
    }
    return accumulate(dense, whole);
  }
  dispose(): void {
    this.dense?.dispose();
    this.dense = null;
    for (const r of this.regions.splice(0)) r.dispose();
  }
}

/**
 * The base's gradient from views' regions (consumed): their concatenation where they tile one
 * dim in one dtype, else zeros with each region copied in (added where it overlaps an earlier one).
 */
function mergeRegions(regions: RegionGrad[]): RawTensor {
  try {
    const first = regions[0]!;
    const { shape, dim } = first;
    const dtype = first.g.dtype;
    const sorted = [...regions].sort((a, b) => a.start - b.start);
    let at = 0;
    let tiles = true;
    for (const r of sorted) {
      if (r.dim !== dim || r.g.dtype !== dtype || r.start !== at) tiles = false;
      at += r.len;
    }
    if (tiles && at === shape[dim]) {
      return sorted.length === 1
        ? first.g.view(first.g.layout)
        : cat(
            sorted.map((r) => r.g),
            dim,
          );
    }
    const z = full(shape, 0, dtype, first.g.device);
    try {
      regions.forEach((r, i) => {
        const region = z.narrow(r.dim, r.start, r.len);
        try {
          const overlaps = regions
            .slice(0, i)
            .some((q) => q.dim !== r.dim || (q.start < r.start + r.len && r.start < q.start + q.len));
          if (!overlaps) copyInto(region, r.g);
          else {
            const sum = binary('add', region, r.g);
            try {
              copyInto(region, sum);
            } finally {
              sum.dispose();
            }
          }
        } finally {
          region.dispose();
        }
      });
      return z;
    } catch (e) {
      z.dispose();
      throw e;
    }
  } finally {
    for (const r of regions) r.dispose();
  }
}

/**
 * One recorded op. A node lives while a tensor it made (or a view of it) is alive or a live node
 * leads to it (refs); at zero its saved tensors go back, and so do its edges' references.
 */
export class GradNode {
  freed = false;
  refs = 0;
  constructor(
    readonly op: string,
    /** the op's gradient rule (a view's may give its base a region) */
    readonly rule: (...a: Parameters<GradRule<unknown[]>>) => [RawTensor, Part][],
    /** the op's arguments with every tensor replaced by a view this node owns */
    readonly saved: unknown[],
    readonly out: RawTensor,
    /** saved view of an input that requires a gradient -> its edge */
    readonly edges: Map<RawTensor, Edge>,
    readonly versions: [Storage, number, RawTensor][],
  ) {}

  /** gives back what the node saved; the node stays in the graph, freed */
  release(): void {
    if (this.freed) return;
    this.freed = true;
    for (const [, , t] of this.versions) t.dispose();
    this.out.dispose();
  }
}

/** one reference to node fewer: at zero it releases and drops its own references */
export function dropNode(node: GradNode): void {
  const stack = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (--n.refs > 0) continue;
    n.release();
    for (const e of n.edges.values()) if (e instanceof GradNode) stack.push(e);
  }
}

/** ties out to node (one reference) */
function attach(out: RawTensor, node: GradNode): void {
  for (const e of node.edges.values()) if (e instanceof GradNode) e.refs++;
  node.refs++;
  out.gradState = { node };
}

let leaves = 0;
let noGradDepth = 0;
const refresh = (): void => setGradRecorder(leaves > 0 && noGradDepth === 0 ? record : null);

/** a leaf starts (or stops) requiring a gradient */
export function leafCount(delta: number): void {
  leaves += delta;
  refresh();
}

/** runs fn with recording off: nothing it computes takes part in a gradient */
export function noGrad<T>(fn: () => T): T {
  noGradDepth++;
  refresh();
  try {
    return fn();
  } finally {
    noGradDepth--;
    refresh();
  }
}

/** the tensors an op's arguments hold: at the top level, in arrays, and in option records */
function eachTensor(v: unknown, f: (t: RawTensor) => void, depth = 0): void {
  if (v instanceof RawTensor) f(v);
  else if (depth < 2 && v !== null && typeof v === 'object') {
    for (const x of Array.isArray(v) ? v : Object.values(v)) eachTensor(x, f, depth + 1);
  }
}

/** v with every tensor replaced by a view the node owns */
function saveArgs(
  v: unknown,
  views: [Storage, number, RawTensor][],
  map: Map<RawTensor, RawTensor>,
  depth = 0,
): unknown {
  if (v instanceof RawTensor) {
    let s = map.get(v);
    if (!s) {
      s = new RawTensor(v.storage, v.layout, v.dtype);
      map.set(v, s);
      views.push([v.storage, v.storage.version, s]);
    }
    return s;
  }
  if (depth < 2 && v !== null && typeof v === 'object') {
    if (Array.isArray(v)) return v.map((x) => saveArgs(x, views, map, depth + 1));
    if (Object.getPrototypeOf(v) === Object.prototype) {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) o[k] = saveArgs(x, views, map, depth + 1);
      return o;
    }
  }
  return v;
}

const edgeOf = (t: RawTensor): Edge => (t.gradState as GradState).node ?? (t as unknown as GradLeaf);

/** the registry's hook: ties out to a node when an argument requires a gradient */
function record(op: string, args: readonly unknown[], out: unknown, writes: RawTensor | null): void {
  let wants = false;
  eachTensor(args, (t) => {
    if (t.gradState !== null) wants = true;
  });
  if (writes !== null && writes.gradState !== null) {
    throw new TensorError(
      `${op}: writes in place into a tensor that requires a gradient; write into a copy, or detach() it`,
    );
  }
  if (!wants || writes !== null) return;
  const rule = gradRuleOf(op);
  if (rule === 'none') return;
  if (rule === 'missing') {
    throw new TensorError(
      `${op}: has no gradient yet, and an input requires one; run it under noGrad() or on detach()ed inputs`,
    );
  }
  if (!(out instanceof RawTensor))
    throw new TensorError(`${op}: internal: a gradient rule for an op without one output`);
  // integer results (argmax, comparisons) take no gradient
  if (!isFloatDType(out.dtype)) return;
  const views: [Storage, number, RawTensor][] = [];
  const map = new Map<RawTensor, RawTensor>();
  const saved = saveArgs(args, views, map) as unknown[];
  const edges = new Map<RawTensor, Edge>();
  for (const [orig, view] of map) if (orig.gradState !== null) edges.set(view, edgeOf(orig));
  attach(out, new GradNode(op, rule, saved, new RawTensor(out.storage, out.layout, out.dtype), edges, views));
}

/** records a view (or a reshape) of base: rule maps the view's gradient to base's shape (or to
 *  its region of it) */
export function recordView(base: RawTensor, out: RawTensor, op: string, rule: (g: RawTensor) => Part): void {
  if (base.gradState === null || noGradDepth > 0) return;
  const edges = new Map<RawTensor, Edge>();
  const keep = new RawTensor(base.storage, base.layout, base.dtype);
  edges.set(keep, edgeOf(base));
  const node = new GradNode(
    op,
    (g) => [[keep, rule(g)]],
    [keep],
    new RawTensor(out.storage, out.layout, out.dtype),
    edges,
    [[base.storage, base.storage.version, keep]],
  );
  attach(out, node);
}

/** adds g into acc (both owned by the caller; the sum replaces acc) */
function accumulate(acc: RawTensor | null, g: RawTensor): RawTensor {
  if (acc === null) return g;
  try {
    return binary('add', acc, g);
  } finally {
    acc.dispose();
    g.dispose();
  }
}

/** the nodes reachable from root, each after every node that feeds it */
function topoOrder(root: GradNode): GradNode[] {
  const order: GradNode[] = [];
  const seen = new Set<GradNode>();
  const stack: [GradNode, boolean][] = [[root, false]];
  while (stack.length > 0) {
    const [n, done] = stack.pop()!;
    if (done) {
      order.push(n);
      continue;
    }
    if (seen.has(n)) continue;
    seen.add(n);
    stack.push([n, true]);
    for (const e of n.edges.values()) if (e instanceof GradNode && !seen.has(e)) stack.push([e, false]);
  }
  return order.reverse();
}

/**
 * Backward from root with gradient g (owned by this call): every leaf reached gets its gradient
 * added to .grad, in the leaf's shape and dtype. The nodes are freed unless retainGraph.
 */
export function backward(
  root: RawTensor,
  g: RawTensor,
  retainGraph: boolean,
  toLeafGrad: (r: RawTensor) => RawTensor,
): void {
  const state = root.gradState as GradState | null;
  if (state === null) throw new TensorError(`backward: ${root.describe()} does not require a gradient`);
  const pending = new Map<GradNode, GradSum>();
  const toLeaf = (leaf: GradLeaf, part: Part): void => {
    if (leaf.isDisposed) {
      part.dispose();
      return;
    }
    const grad = part instanceof RegionGrad ? mergeRegions([part]) : part;
    leaf.grad = toLeafGrad(accumulate(leaf.grad, grad));
  };
  const sumOf = (node: GradNode): GradSum => {
    let sum = pending.get(node);
    if (!sum) {
      sum = new GradSum();
      pending.set(node, sum);
    }
    return sum;
  };
  noGradDepth++;
  refresh();
  try {
    if (state.node === null) {
      toLeaf(root as unknown as GradLeaf, g);
      return;
    }
    sumOf(state.node).add(g);
    for (const node of topoOrder(state.node)) {
      const sum = pending.get(node);
      if (sum === undefined) continue;
      pending.delete(node);
      const grad = sum.take();
      if (node.freed) {
        grad.dispose();
        throw new TensorError(
          `backward: the graph through ${node.op} was freed by an earlier backward(); pass { retainGraph: true } to the first`,
        );
      }
      for (const [s, v] of node.versions) {
        if (s.version !== v) {
          grad.dispose();
          throw new TensorError(
            `backward: a tensor that ${node.op}'s gradient needs was written in place after ${node.op} ran; write into a copy instead`,
          );
        }
      }
      let pairs: [RawTensor, Part][];
      try {
        pairs = node.rule(grad, node.saved, node.out, (t) => node.edges.has(t));
      } finally {
        grad.dispose();
      }
      // an input that requires a gradient its rule does not give (a mask, running statistics)
      // is an error, never a silently missing gradient
      const given = new Set(pairs.map(([i]) => i));
      if ([...node.edges.keys()].some((t) => !given.has(t))) {
        for (const [, gi] of pairs) gi.dispose();
        throw new TensorError(
          `backward: ${node.op} gives no gradient to one of its inputs that requires one (only to its main operands); detach() that input`,
        );
      }
      for (const [input, gi] of pairs) {
        const edge = node.edges.get(input);
        if (edge === undefined) {
          gi.dispose();
          continue;
        }
        if (edge instanceof GradNode) sumOf(edge).add(gi);
        else toLeaf(edge, gi);
      }
      if (!retainGraph) node.release();
    }
  } finally {
    for (const r of pending.values()) r.dispose();
    noGradDepth--;
    refresh();
  }
}
