// Where modules get their weights: a safetensors Checkpoint, or tensors in memory (tests,
// models built in code). Modules ask by Hugging Face name and say the dtype and device they
// want; the source converts where it must.
import type { Tensor } from '../tensor/tensor.ts';
import type { Device } from '../device/device.ts';
import type { DType } from '../core/dtype.ts';
import { TensorError } from '../core/errors.ts';

export interface WeightInfo {
  readonly shape: readonly number[];
  /** the stored dtype ('BF16' in a safetensors file, 'bf16' in memory), where the source knows it */
  readonly dtype?: string;
}

export interface WeightSource {
  /** where the weights come from, for error messages */
  readonly label: string;
  has(name: string): boolean;
  info(name: string): WeightInfo;
  load(name: string, opts: { device: Device; dtype: DType }): Promise<Tensor>;
}

/** weights held in memory by name; loading copies (or converts) to the asked device and dtype */
export class MemoryWeights implements WeightSource {
  readonly label = 'in-memory weights';
  constructor(private readonly tensors: ReadonlyMap<string, Tensor> | Readonly<Record<string, Tensor>>) {}
  private get(name: string): Tensor | undefined {
    return this.tensors instanceof Map
      ? this.tensors.get(name)
      : (this.tensors as Readonly<Record<string, Tensor>>)[name];
  }
  has(name: string): boolean {
    return this.get(name) !== undefined;
  }
  info(name: string): WeightInfo {
    const t = this.get(name);
    if (!t) throw new TensorError(`${this.label}: no tensor named '${name}'`);
    return { shape: t.shape, dtype: t.dtype };
  }
  async load(name: string, opts: { device: Device; dtype: DType }): Promise<Tensor> {
    const t = this.get(name);
    if (!t) throw new TensorError(`${this.label}: no tensor named '${name}'`);
    const moved = t.to(opts.device);
    const out = moved.toDtype(opts.dtype);
    if (moved !== t && moved !== out) moved.dispose();
    // always hand out a tensor the caller owns
    return out === t ? t.view(t.layout) : out;
  }
}

/** loads `name` and checks its shape, naming the source and tensor when it differs */
export async function loadChecked(
  src: WeightSource,
  name: string,
  shape: readonly number[],
  opts: { device: Device; dtype: DType },
): Promise<Tensor> {
  if (!src.has(name))
    throw new TensorError(`${src.label}: missing weight '${name}' (expected shape [${shape.join(', ')}])`);
  const got = src.info(name).shape;
  if (got.length !== shape.length || got.some((n, i) => n !== shape[i])) {
    throw new TensorError(
      `${src.label}: weight '${name}' has shape [${got.join(', ')}], the config says [${shape.join(', ')}]`,
    );
  }
  return src.load(name, opts);
}
