// Every op family, loaded for its declarations: what reads the whole registry (the op reference,
// its freshness test) imports this.
import './attention.ts';
import './attention-paged.ts';
import './cast.ts';
import './conv.ts';
import './copy.ts';
import './creation.ts';
import './elementwise.ts';
import './indexing.ts';
import './linear.ts';
import './matmul.ts';
import './nn.ts';
import './pool.ts';
import './random.ts';
import './reduce.ts';
import './scan.ts';
import './sort.ts';
import './upsample.ts';
import './grads.ts';
import './conv-grad.ts';
import './attention-grad.ts';
import './batchnorm-train.ts';
import './upsample-grad.ts';
import './lrn.ts';
import './rnn.ts';
import './train.ts';
import './swiglu.ts';

export { registeredOps, type OpInfo } from './registry.ts';
