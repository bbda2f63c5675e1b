// Error types. Messages name the op, the shapes and the dtypes involved, so a user can see at a
// glance what was passed; the class says what kind of failure it was.
export class TensorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
/** shape, dtype, dim or index arguments that do not fit the op */
export class ShapeError extends TensorError {}
export class DTypeError extends TensorError {}
export class IndexError extends TensorError {}
/** a tensor used after dispose() */
export class DisposedError extends TensorError {}
/** the op has no implementation on this device yet (never a silent CPU fallback) */
export class NotOnDeviceError extends TensorError {}
/** a native library could not be found or loaded */
export class LibraryNotFoundError extends TensorError {}
/** a GPU runtime call failed: names the call, its arguments and the library's error text */
export class GpuError extends TensorError {
  constructor(
    message: string,
    readonly code: number,
    readonly call: string,
  ) {
    super(message);
  }
}
export class OutOfMemoryError extends GpuError {}
/** a safetensors file, index or folder that cannot be read as one: names the file (and tensor) */
export class SafetensorsError extends TensorError {}
/** something that cannot be recorded into a GPU graph was asked for during a capture */
export class GraphCaptureError extends TensorError {}
/** the device's architecture has no compiled code object */
export class NoKernelForArchError extends TensorError {}

export function fmtShape(s: readonly number[]): string {
  return `[${s.join(', ')}]`;
}
