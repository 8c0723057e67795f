/**
 * `parley completion bash|zsh`: a shell completion script generated from the
 * command tree itself, so it never lists a command or option that does not
 * exist. bash: `source <(parley completion bash)`; zsh: the same line (it
 * loads bashcompinit), or write it to a file in $fpath.
 */
import type { Command } from 'commander';
import { UsageError } from './client.js';

interface Node {
  path: string;
  words: string[];
}

/** Every command path (space-joined, '' for the program) with its subcommands and options. */
function tree(program: Command): Node[] {
  const nodes: Node[] = [];
  const walk = (command: Command, path: string, inherited: string[]) => {
    const own = command.options.flatMap((o) => [o.short, o.long].filter((f): f is string => f !== undefined));
    const options = [...inherited, ...own, '--help'];
    const subs = command.commands.flatMap((c) => [c.name(), ...c.aliases()]);
    nodes.push({ path, words: [...subs, ...options] });
    for (const sub of command.commands) {
      for (const name of [sub.name(), ...sub.aliases()])
        walk(sub, path === '' ? name : `${path} ${name}`, [...inherited, ...own]);
    }
  };
  walk(program, '', []);
  return nodes;
}

function bash(program: Command): string {
  const cases = tree(program)
    .map((n) => `    "${n.path}") words="${n.words.join(' ')}" ;;`)
    .join('\n');
  return `# parley completion for bash (source <(parley completion bash))
_parley() {
  local cur path="" w words i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    case "\${path:+$path }$w" in
${tree(program)
  .filter((n) => n.path !== '')
  .map((n) => `      "${n.path}") path="${n.path}" ;;`)
  .join('\n')}
    esac
  done
  case "$path" in
${cases}
    *) words="" ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _parley parley
`;
}

function zsh(program: Command): string {
  return `#compdef parley
# parley completion for zsh: source <(parley completion zsh), or save as _parley in $fpath
autoload -U +X bashcompinit && bashcompinit
${bash(program)}`;
}

export function completionCommand(program: Command): void {
  program
    .command('completion')
    .description('print a shell completion script: bash or zsh')
    .argument('<shell>', 'bash or zsh')
    .action((shell: string) => {
      if (shell !== 'bash' && shell !== 'zsh')
        throw new UsageError(`completion: shell must be bash or zsh, not '${shell}'`);
      process.stdout.write(shell === 'bash' ? bash(program) : zsh(program));
    });
}
