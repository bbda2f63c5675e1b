// placeholder signatures: replaced by the family's real dispatcher
import type { Tensor } from '../tensor.ts';
import type { UnaryOp, ParamUnary, BinaryOp, CmpOp } from './types.ts';
export function unary(_x: Tensor, _op: UnaryOp): Tensor { throw new Error('not written yet'); }
export function paramUnary(_x: Tensor, _p: ParamUnary): Tensor { throw new Error('not written yet'); }
export function binary(_op: BinaryOp, _a: Tensor, _b: Tensor | number): Tensor { throw new Error('not written yet'); }
export function compare(_op: CmpOp, _a: Tensor, _b: Tensor | number): Tensor { throw new Error('not written yet'); }
export function where(_c: Tensor, _a: Tensor | number, _b: Tensor | number): Tensor { throw new Error('not written yet'); }
