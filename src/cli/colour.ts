// Whether the command line prints ANSI colours, decided in one place: never into a pipe or a
// file (a log or `| grep` would get escape codes), never with NO_COLOR set to anything
// non-empty (no-color.org), and in a pipe too with FORCE_COLOR set (other than 0 or false).
// NO_COLOR wins over FORCE_COLOR: asking for no colour is the stronger wish.

export interface ColourEnv {
  readonly NO_COLOR?: string | undefined;
  readonly FORCE_COLOR?: string | undefined;
}

export function useColour(env: ColourEnv = process.env, isTTY: boolean = process.stdout.isTTY === true): boolean {
  if (env.NO_COLOR) return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force.toLowerCase() !== 'false';
  return isTTY;
}

/** cli-table3's style: its usual red headings and grey borders, or none without colour */
export function tableStyle(colour: boolean = useColour()): { head: string[]; border: string[] } {
  return colour ? { head: ['red'], border: ['grey'] } : { head: [], border: [] };
}
