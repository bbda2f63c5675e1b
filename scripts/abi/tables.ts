// Everything the ROCm layer declares, gathered per library for the conformance suite: the same
// objects src/ffi/*.ts hands to koffi, never a copy.
import { HIP_ALIASES, HIP_CONST, HIP_FUNCTIONS, HIP_STRUCTS } from '../../src/ffi/hip.ts';
import { MIOPEN_ALIASES, MIOPEN_CONST, MIOPEN_FUNCTIONS, MIOPEN_STRUCTS } from '../../src/ffi/miopen.ts';
import { SHARED_ALIASES, type NativeAlias, type NativeTable } from '../../src/ffi/native.ts';
import { ROCBLAS_ALIASES, ROCBLAS_CONST, ROCBLAS_FUNCTIONS } from '../../src/ffi/rocblas.ts';
import { NCCL_ALIASES, NCCL_CONST, NCCL_FUNCTIONS, NCCL_UNIQUE_ID_BYTES } from '../../src/ffi/nccl.ts';

export interface StructLayout {
  readonly size: number;
  readonly fields: Readonly<Record<string, number>>;
}

export interface AbiLibrary {
  readonly id: string;
  /** the shared object in Debian's ROCm 6.4 packages */
  readonly soname: string;
  readonly functions: NativeTable;
  readonly consts: Readonly<Record<string, number>>;
  readonly structs: Readonly<Record<string, StructLayout>>;
}

export const ABI_LIBRARIES: readonly AbiLibrary[] = [
  { id: 'hip', soname: 'libamdhip64.so.6', functions: HIP_FUNCTIONS, consts: HIP_CONST, structs: HIP_STRUCTS },
  { id: 'rocblas', soname: 'librocblas.so.4', functions: ROCBLAS_FUNCTIONS, consts: ROCBLAS_CONST, structs: {} },
  {
    id: 'miopen',
    soname: 'libMIOpen.so.1',
    functions: MIOPEN_FUNCTIONS,
    consts: MIOPEN_CONST,
    structs: MIOPEN_STRUCTS,
  },
  // RCCL from Debian's librccl-dev / librccl1 (5.4.3): NCCL's API, which src/ffi/nccl.ts binds
  // for both vendors
  {
    id: 'rccl',
    soname: 'librccl.so.1',
    functions: NCCL_FUNCTIONS,
    consts: NCCL_CONST,
    structs: { ncclUniqueId: { size: NCCL_UNIQUE_ID_BYTES, fields: { internal: 0 } } },
  },
];

export const ABI_ALIASES: readonly NativeAlias[] = [
  ...SHARED_ALIASES,
  ...HIP_ALIASES,
  ...ROCBLAS_ALIASES,
  ...MIOPEN_ALIASES,
  ...NCCL_ALIASES,
];

/** headers in include order; the typedef works around a C-mode bug in miopen.h 6.4 (line
 *  ~5990 names `miopenTensorArgument_t` without its struct tag), which C++ would accept */
export const C_PRELUDE = `#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <hip/hip_runtime_api.h>
#include <hip/hip_deprecated.h>
#include <rocblas/rocblas.h>
typedef struct miopenTensorArgument_t miopenTensorArgument_t;
#include <miopen/miopen.h>
#include <rccl/rccl.h>
`;

export const C_FLAGS = ['-D__HIP_PLATFORM_AMD__', '-x', 'c', '-std=gnu11', '-ferror-limit=0', '-Wno-everything'];
