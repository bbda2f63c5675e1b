// Errors from the text side: a model folder's tokenizer files that are missing, malformed or of a
// kind the tokenizer runtime cannot run, ids outside the vocabulary, chat templates that fail.
// Messages name the folder and the file so the user knows which download to look at.
import { TensorError } from '../core/errors.ts';

export class TokenizerError extends TensorError {}
