/** The interactive yes of delete-namespace when --confirm is absent and stdin is a terminal. */
import { createInterface } from 'node:readline/promises';
import { UsageError } from './client.js';

export async function confirmOrRefuse(question: string, confirmed: boolean | undefined): Promise<void> {
  if (confirmed === true) return;
  if (!process.stdin.isTTY) {
    throw new UsageError('refusing without --confirm (stdin is not a terminal, so there is no one to ask)');
  }
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = (await rl.question(`${question} [y/N] `)).trim().toLowerCase();
    if (answer !== 'y' && answer !== 'yes') throw new UsageError('not confirmed; nothing deleted');
  } finally {
    rl.close();
  }
}
