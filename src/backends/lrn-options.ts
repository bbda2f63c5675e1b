// The parameters of local response normalization, as users give them and as the checked op hands
// them to both backends.

/** nn.LocalResponseNorm's parameters beside the window size (PyTorch's defaults) */
export interface LocalResponseNormOptions {
  /** default 1e-4; divided by size, as PyTorch does */
  readonly alpha?: number;
  /** default 0.75 */
  readonly beta?: number;
  /** default 1 */
  readonly k?: number;
}

/** checked: every field present and finite */
export interface LrnSettings {
  readonly size: number;
  readonly alpha: number;
  readonly beta: number;
  readonly k: number;
}
