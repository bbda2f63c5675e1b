// Chat templates: Jinja source from the model folder, rendered with @huggingface/jinja (which
// sets up Jinja the way transformers does: trim_blocks and lstrip_blocks on, raise_exception and
// strftime_now defined). The template is parsed on first use, so a template this Jinja
// implementation cannot parse only fails applyChatTemplate, never encode/decode.
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { TokenizerError } from './errors.ts';
import { isObject, type ModelTextFiles } from './files.ts';

export interface ChatMessage {
  role: string;
  content: string;
}

/** Where a template came from, for error messages. */
interface TemplateSource {
  text: string;
  where: string;
}

/**
 * The default template: chat_template.jinja where present (newer exports), else tokenizer_config's
 * chat_template, which is either a string or a list of {name, template} (then the one named
 * "default", as transformers picks when no name is asked for). Otherwise `missing` says why
 * there is no usable template.
 */
export function findChatTemplate(files: ModelTextFiles): TemplateSource | { missing: string } {
  if (files.chatTemplateFile !== undefined)
    return { text: files.chatTemplateFile, where: join(files.dir, 'chat_template.jinja') };
  const where = join(files.dir, 'tokenizer_config.json');
  const raw = files.tokenizerConfig?.chat_template;
  if (typeof raw === 'string') return { text: raw, where };
  if (Array.isArray(raw)) {
    const named = raw.filter(isObject);
    const def = named.find((t) => t.name === 'default');
    if (def && typeof def.template === 'string')
      return { text: def.template, where: `${where} (chat_template "default")` };
    const names = named.map((t) => JSON.stringify(t.name)).join(', ');
    return { missing: `${where}: chat_template lists templates named ${names || '(none)'} but none named "default"` };
  }
  if (raw !== undefined && raw !== null)
    return { missing: `${where}: chat_template must be a string or a list of {name, template}` };
  return {
    missing: `${files.dir}: the model has no chat template (no chat_template in tokenizer_config.json, no chat_template.jinja)`,
  };
}

export class ChatTemplate {
  private parsed: Template | undefined;
  constructor(private readonly source: TemplateSource) {}

  render(messages: readonly ChatMessage[], vars: Record<string, string | boolean>): string {
    if (!this.parsed) {
      try {
        this.parsed = new Template(this.source.text);
      } catch (e) {
        throw new TokenizerError(`${this.source.where}: the chat template does not parse: ${(e as Error).message}`);
      }
    }
    // plain copies: the template sees exactly {role, content} and cannot touch the caller's objects
    const msgs = messages.map((m) => ({ role: m.role, content: m.content }));
    try {
      return this.parsed.render({ ...vars, messages: msgs });
    } catch (e) {
      throw new TokenizerError(`${this.source.where}: rendering the chat template failed: ${(e as Error).message}`);
    }
  }
}
