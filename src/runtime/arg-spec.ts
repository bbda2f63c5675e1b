// The parameter kinds of a kernel signature, apart from the signature tables (kernel-sigs*.ts),
// which all list them.
import type { KernelArgKind } from './kernels.ts';

/** a parameter as ops pass it: a KernelArg kind, 'geom' for the 368-byte Geom record, or
 *  'cat' for copy.hip's 352-byte CatArgs record (src/backends/gpu/cat.ts packs it) */
export type ArgSpec = Exclude<KernelArgKind, 'bytes'> | 'geom' | 'cat';
