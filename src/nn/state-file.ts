// A module's state dict in a safetensors file, through the io layer's writer and reader.
import { SafetensorsError } from '../core/errors.ts';
import { Checkpoint, saveSafetensors } from '../io/safetensors.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { Module } from './module.ts';

/** writes module.stateDict() to one .safetensors file (names dotted, as PyTorch's) */
export async function saveModule(module: Module, path: string, metadata?: Record<string, string>): Promise<void> {
  await saveSafetensors(path, module.stateDict(), metadata);
}

/**
 * Reads a .safetensors file written by saveModule (or by PyTorch's safetensors for a module of
 * the same shape) into module, each tensor loaded straight to the device and dtype of the
 * module's own. strict (default): the names must match exactly.
 */
export async function loadModule(
  module: Module,
  path: string,
  opts: { strict?: boolean } = {},
): Promise<{ missing: string[]; unexpected: string[] }> {
  const own = module.stateDict();
  const ck = await Checkpoint.open(path);
  const loaded = new Map<string, Tensor>();
  try {
    const strict = opts.strict ?? true;
    const missing = Object.keys(own).filter((n) => !ck.has(n));
    const unexpected = ck.names().filter((n) => !(n in own));
    if (strict && (missing.length > 0 || unexpected.length > 0)) {
      const parts = [];
      if (missing.length > 0) parts.push(`missing: ${missing.join(', ')}`);
      if (unexpected.length > 0) parts.push(`unexpected: ${unexpected.join(', ')}`);
      throw new SafetensorsError(`loadModule: ${path}: names do not match the module's (${parts.join('; ')})`);
    }
    for (const [n, t] of Object.entries(own)) {
      if (ck.has(n)) loaded.set(n, await ck.load(n, { device: t.device, dtype: t.dtype }));
    }
    module.loadStateDict(loaded, { strict: false });
    return { missing, unexpected };
  } finally {
    for (const t of loaded.values()) t.dispose();
    await ck.close();
  }
}
