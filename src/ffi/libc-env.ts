// Setting an environment variable that a native library reads with getenv(). Node's process.env
// writes reach the C environment, Bun's do not (seen with Bun 1.4.5), so the variable is also set
// with libc's setenv. Never overwrites a value the user set.
import koffi from 'koffi';

type SetEnv = (name: string, value: string, overwrite: number) => number;
let setenv: SetEnv | null | undefined;

function libcSetenv(): SetEnv | null {
  if (setenv !== undefined) return setenv;
  try {
    setenv = koffi.load('libc.so.6').func('int setenv(const char *name, const char *value, int overwrite)') as SetEnv;
  } catch {
    setenv = null; // not glibc: process.env alone (enough under Node)
  }
  return setenv;
}

/** sets `name` for this process and the native libraries in it, unless it is set already */
export function setNativeEnvDefault(name: string, value: string): void {
  if (process.env[name] !== undefined) return;
  process.env[name] = value;
  libcSetenv()?.(name, value, 0);
}

type UnsetEnv = (name: string) => number;
let unsetenv: UnsetEnv | null | undefined;

function libcUnsetenv(): UnsetEnv | null {
  if (unsetenv !== undefined) return unsetenv;
  try {
    unsetenv = koffi.load('libc.so.6').func('int unsetenv(const char *name)') as UnsetEnv;
  } catch {
    unsetenv = null;
  }
  return unsetenv;
}

/**
 * runs fn with `name` set to `value` for this process and its native libraries (a library that
 * reads it while it loads), then unsets it again; a value the user set is left as it is
 */
export function withNativeEnv<T>(name: string, value: string, fn: () => T): T {
  if (process.env[name] !== undefined) return fn();
  process.env[name] = value;
  libcSetenv()?.(name, value, 1);
  try {
    return fn();
  } finally {
    delete process.env[name];
    libcUnsetenv()?.(name);
  }
}
