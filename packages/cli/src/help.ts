/**
 * Help for a person: every command's help lists the global options too
 * (--endpoint, --output), marks the options a command requires, and ends
 * with an example one can paste.
 */
import { type Command, Help, type Option } from 'commander';

/** One example per command, by its path below `parley`. */
export const EXAMPLES: Record<string, string> = {
  'distributed-state set': `parley state set -n jobs -k job-1 -v '{"status":"open"}' -t 86400
  parley state set -n jobs -k job-1 -v @job.json --if-version 3
  cat big.json | parley state set -n jobs -k job-1 -v -`,
  'distributed-state get': `parley state get -n jobs -k job-1
  parley state get -n jobs -k job-1 --print-value-only | jq .status`,
  'distributed-state delete': 'parley state delete -n jobs -k job-1 --if-version 4',
  'distributed-state list': `parley state list -n jobs --prefix job- --sort-by updated_at --sort-order desc
  parley state list -n jobs --filter 'status = "open" and attempts >= 3' -l 20`,
  'distributed-state delete-namespace': "parley state delete-namespace -n jobs --pattern 'job-*' --confirm",
  'distributed-state watch': 'parley state watch -n jobs --prefix job- --from-revision 42',
  'lock acquire': 'parley lock acquire -n deploy -k prod --owner ci-7 --ttl 120 --wait 30',
  'lock renew': 'parley lock renew -n deploy -k prod --owner ci-7 --fence 12 --ttl 120',
  'lock release': 'parley lock release -n deploy -k prod --owner ci-7 --fence 12',
  'lock inspect': 'parley lock inspect -n deploy -k prod',
  claim: `parley claim -n tasks -k task-9 -v '"worker-3"'`,
  'lease acquire': `parley lease acquire -n leader -k shard-1 --holder node-a -t 30 -s '{"since":"now"}'`,
  'lease renew': 'parley lease renew -n leader -k shard-1 --holder node-a --epoch 5 -t 30',
  'lease write': `parley lease write -n leader -k shard-1 --holder node-a --epoch 5 -s '{"step":2}'`,
  'lease release': 'parley lease release -n leader -k shard-1 --holder node-a --epoch 5',
  'lease get': 'parley lease get -n leader -k shard-1',
  'queue enqueue': `parley queue enqueue -n work -q emails -i '{"to":"a@example.com"}' -k welcome-a`,
  'queue take': 'parley queue take -n work -q emails --holder worker-1 -t 30',
  'queue heartbeat': 'parley queue heartbeat -n work -q emails --id 7 --holder worker-1 --fence 41 -t 30',
  'queue complete': `parley queue complete -n work -q emails --id 7 --holder worker-1 --fence 41 -r '{"sent":true}'`,
  'queue fail': `parley queue fail -n work -q emails --id 7 --holder worker-1 --fence 41 --reason '"smtp down"' --retry-after 60`,
  'queue get': 'parley queue get -n work -q emails --id 7',
  'queue list': 'parley queue list -n work -q emails -s dead',
  'queue stats': 'parley queue stats -n work -q emails',
  'replicated set': `parley replicated set -n presence -k alice -v '{"online":true}' -t 300`,
  'replicated increment': 'parley replicated increment -n stats -k visits --by 5',
  'replicated get': 'parley replicated get -n presence -k alice -c majority',
  'replicated delete': 'parley replicated delete -n presence -k alice',
  'replicated list': 'parley replicated list -n presence --prefix al',
  'replicated watch': 'parley replicated watch -n presence',
  status: 'parley status -e 127.0.0.1:4001',
  serve: 'parley serve -p 4100 -d ./data   (npm start -- -p 4100)',
  'cluster up': 'parley cluster up -n 3   (then: parley status -e 127.0.0.1:4001)',
  mcp: 'parley mcp -e http://127.0.0.1:4000',
  completion: 'parley completion bash >> ~/.bashrc   ·   parley completion zsh > ~/.zfunc/_parley',
};

/** The command's path below the program: 'distributed-state set', 'status'. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Help settings for the program; set before subcommands are added (they inherit them). */
export const HELP_CONFIG: Partial<Help> = {
  showGlobalOptions: true,
  optionDescription(this: Help, option: Option): string {
    const text = Help.prototype.optionDescription.call(this, option);
    return option.mandatory ? `(required) ${text}` : text;
  },
};

/** Appends each command's example to its help (every command that does something has one). */
export function addExamples(command: Command): void {
  for (const sub of command.commands) {
    const example = EXAMPLES[commandPath(sub)];
    if (example !== undefined) sub.addHelpText('after', `\nExample:\n  ${example}\n`);
    addExamples(sub);
  }
}
