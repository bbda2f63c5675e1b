// An optimizer's state dict in one safetensors file: the state tensors by name
// ("state.<parameter index>.<key>"), the step counts and the groups' hyperparameters as JSON in
// the file's metadata. Resuming from it takes the same next steps as the optimizer saved.
import { SafetensorsError } from '../core/errors.ts';
import { Checkpoint, saveSafetensors } from '../io/safetensors.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { Hyper, Optimizer, OptimizerState, ParamState } from './optimizer.ts';

const FORMAT = 'rocm-tensor optimizer state';

/** writes opt.stateDict() to path */
export async function saveOptimizer<H extends Hyper>(opt: Optimizer<H>, path: string): Promise<void> {
  const sd = opt.stateDict();
  const tensors: Record<string, Tensor> = {};
  const numbers: Record<string, Record<string, number>> = {};
  try {
    for (const [i, st] of Object.entries(sd.state)) {
      for (const [k, v] of Object.entries(st)) {
        if (v instanceof Tensor) tensors[`state.${i}.${k}`] = v;
        else (numbers[i] ??= {})[k] = v;
      }
    }
    await saveSafetensors(path, tensors, {
      format: FORMAT,
      paramGroups: JSON.stringify(sd.paramGroups),
      numbers: JSON.stringify(numbers),
    });
  } finally {
    for (const t of Object.values(tensors)) t.dispose();
  }
}

/** restores a file written by saveOptimizer into opt (same parameter groups and sizes) */
export async function loadOptimizer<H extends Hyper>(opt: Optimizer<H>, path: string): Promise<void> {
  const ck = await Checkpoint.open(path);
  const loaded: Tensor[] = [];
  try {
    const meta = ck.metadata;
    if (meta.format !== FORMAT) throw new SafetensorsError(`loadOptimizer: ${path} is not an optimizer state file`);
    const state: Record<number, ParamState> = {};
    let groups: OptimizerState<H>['paramGroups'];
    try {
      groups = JSON.parse(meta.paramGroups ?? '') as OptimizerState<H>['paramGroups'];
      const numbers = JSON.parse(meta.numbers ?? '') as Record<string, Record<string, number>>;
      for (const [i, st] of Object.entries(numbers)) state[Number(i)] = { ...st };
    } catch {
      throw new SafetensorsError(`loadOptimizer: ${path}: its metadata is not valid JSON`);
    }
    for (const name of ck.names()) {
      const m = /^state\.(\d+)\.(\w+)$/.exec(name);
      if (m === null) throw new SafetensorsError(`loadOptimizer: ${path}: unexpected tensor '${name}'`);
      const t = await ck.load(name);
      loaded.push(t);
      (state[Number(m[1])] ??= {})[m[2]!] = t;
    }
    opt.loadStateDict({ state, paramGroups: groups });
  } finally {
    for (const t of loaded) t.dispose();
    await ck.close();
  }
}
