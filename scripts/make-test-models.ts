// Writes the small random model folders of test/fixtures/model-folders.ts under a directory,
// e.g. on the GPU machine for the transformers cross-check:
//   npx tsx scripts/make-test-models.ts /tmp/tiny-models
import { FOLDERS, writeModelFolder } from '../test/fixtures/model-folders.ts';

const root = process.argv[2];
if (!root) {
  console.error('usage: tsx scripts/make-test-models.ts OUT_DIR');
  process.exit(2);
}
for (const spec of FOLDERS) {
  const { dir } = await writeModelFolder(root, spec);
  console.log(`${spec.name}: ${dir}`);
}
