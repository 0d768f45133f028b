# fish completion for git-forge.
# Install: git forge completion fish > ~/.config/fish/completions/git-forge.fish
# fish 3.6 does not pass `git forge <TAB>` on to it (fish issue 9457); with fish 3.6,
# this line in ~/.config/fish/config.fish does:
#   complete -c git -f -n "__fish_git_using_command forge" \
#       -a "(__fish_git_complete_custom_command forge)"
# Generated from the argparse parser by tools/generate_docs.py (shtab); do not edit.

# Custom Preamble
# Dynamic values (item ids, clusters, process handles, backlog dirs) come from
# `git-forge __complete KIND --describe`, which reads the project's files and answers in
# milliseconds. A --backlog/--backlog-dir already on the line is passed on.
function __git_forge_values --argument-names kind
    set -l tokens (commandline -opc)
    set -l location
    set -l count (count $tokens)
    for i in (seq 2 $count)
        switch $tokens[$i]
            case --backlog --backlog-dir
                if test $i -lt $count
                    set -a location $tokens[$i] $tokens[(math $i + 1)]
                end
            case '--backlog=*' '--backlog-dir=*'
                set -a location (string split --max 1 = -- $tokens[$i])
        end
    end
    command git-forge __complete $kind --describe $location 2>/dev/null
end

# recover --answer ID=TEXT: the ID and the "=" (fish adds no space after "="). After the
# "=" comes free text: nothing to offer (fish would take "006=" for a whole word and
# add a space).
function __git_forge_answers
    string match -q -- '*=*' (commandline -ct); and return
    __git_forge_values answerable | string replace --regex '^([^\t]*)' '$1='
end

function __git_forge_discarded
    command git for-each-ref --format='%(refname)' refs/forge/discarded/ 2>/dev/null
end
# End Custom Preamble

# Parse current commandline:
# - _shtab_git_forge_cmdpath=(sub)command path seen so far
# - _shtab_git_forge_npos=number of positional arguments given after it
# - options are skipped based on _shtab_git_forge_opts_with_value & _shtab_git_forge_commands lists
function _shtab_git_forge_scan
  set -g _shtab_git_forge_cmdpath ''
  set -g _shtab_git_forge_npos 0
  set -l tokens (commandline -opc)
  set -e tokens[1]
  set -l expect_value 0
  for t in $tokens
    if test $expect_value -eq 1
      set expect_value 0
      continue
    end
    switch "$t"
      case '--*=*'
        continue
      case '-*'
        if contains -- $t $_shtab_git_forge_opts_with_value
          set expect_value 1
        end
        continue
      case '*'
        if test $_shtab_git_forge_npos -eq 0
          set -l candidate $t
          if test -n "$_shtab_git_forge_cmdpath"
            set candidate "$_shtab_git_forge_cmdpath $t"
          end
          if contains -- $candidate $_shtab_git_forge_commands
            set -g _shtab_git_forge_cmdpath $candidate
            continue
          end
        end
        set -g _shtab_git_forge_npos (math $_shtab_git_forge_npos + 1)
    end
  end
end

# Condition helper: true if the current (sub)command path equals the given one.
function _shtab_git_forge_using
  _shtab_git_forge_scan
  test "$_shtab_git_forge_cmdpath" = "$argv"
end

set -g _shtab_git_forge_commands init loop 'loop run' 'loop stop' status watch recover reconcile backlog 'backlog list' 'backlog show' 'backlog add' 'backlog edit' 'backlog answer' 'backlog unblock' 'backlog done' 'backlog drop' 'backlog topology' decision 'decision record' 'decision list' 'decision apply' 'decision revoke' agents preflight hooks 'hooks install' 'hooks uninstall' 'hooks status' proc 'proc list' 'proc show' 'proc output' 'proc wait' 'proc stop' 'proc prune' config demo completion version help
set -g _shtab_git_forge_opts_with_value --ac --actor --agent --agent-arg --answer --answers --backlog --backlog-dir --cluster --commit --config --cursor --defer --depends-on --description --discard --fallback-agent --fallback-agent-arg --grace --idle-timeout --integrate --interval --item --items-json --iterations --leave --limit --max-consecutive-failures --max-cost --max-duration --max-tokens --merge --mode --notes --notify --on-limit --parallel --priority --prompt-file --question --restore --retries --sandbox --sandbox-net --sandbox-writable --stash --state-dir --status --timeout --title --type --verify

complete -c git-forge -e
complete -c git-forge -f

complete -c git-forge -n _shtab_git_forge_using -s h -l help -d 'show this help message and exit'
complete -c git-forge -n _shtab_git_forge_using -l version -d 'show program'"'"'s version number and exit'
complete -c git-forge -n _shtab_git_forge_using -l no-color -d 'never colour the output (also accepted after the command); otherwise colour follows NO_COLOR, then git'"'"'s color.forge or color.ui'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a init -d 'create a backlog directory, its ignore rules and an example config'
complete -c git-forge -n '_shtab_git_forge_using init' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using init' -l backlog -xka "(__fish_complete_directories)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using init' -l json -d 'print {"created": [...], "updated": [...], "kept": [...], "commit": CMD|null}'
complete -c git-forge -n '_shtab_git_forge_using init; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a loop -d 'run the agent loop over the backlog, or stop it'
complete -c git-forge -n '_shtab_git_forge_using loop' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using loop; and test $_shtab_git_forge_npos -eq 0' -a run -d 'run the loop'
complete -c git-forge -n '_shtab_git_forge_using loop run' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l agent -x -d 'claude, codex, gemini, qwen, copilot or opencode (built-in profiles: git forge agents), or the agent command line, split once, never through a shell; {prompt_file} is replaced by a file holding the prompt (default: loop.agent)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l agent-arg -x -d 'an extra flag for the agent, after the profile'"'"'s own (repeatable; write a flag as --agent-arg=--model; default: loop.agentArgs)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l iterations -x -d 'agent starts in this run, retries included (default: loop.iterations)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l retries -x -d 'retries of an item that gives no signal (default: loop.retries)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l timeout -x -d 'minutes an agent may run, fractions allowed (default: loop.timeoutMinutes)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l idle-timeout -x -d 'end an agent that writes nothing for this many minutes, then retry or defer as usual (default: loop.idleTimeoutMinutes)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l max-cost -x -d 'start no iteration once this run'"'"'s agents have cost this much (exit 4; default: loop.maxCostUsd)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l max-tokens -x -d 'start no iteration once this run'"'"'s agents have used N tokens, in and out: a cap for agents that report no cost (exit 4; default: loop.maxTokens)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l max-duration -x -d 'start no iteration once the run is MIN minutes old; the agents running then finish (exit 4; default: loop.maxDurationMinutes)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l on-limit -xka "wait stop fallback" -d 'at the agent'"'"'s usage limit: wait until it lifts and go on, stop (exit 4), or retry the item at once on --fallback-agent, which runs the items until the limit lifts (default: loop.onLimit, wait)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l fallback-agent -x -d 'the agent a usage limit falls back to (--on-limit fallback): a profile'"'"'s name or a command line (default: loop.fallbackAgent)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l fallback-agent-arg -x -d 'an extra flag for the fallback agent (repeatable; default: loop.fallbackAgentArgs)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l max-consecutive-failures -x -d 'stop the run (exit 1) when N attempts in a row fail the same way on at least two items, or on one when the failure is the agent'"'"'s (not logged in, not found) (default: loop.maxConsecutiveFailures, 3)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l notify -x -d 'a command run with one JSON event on stdin when the run waits on a limit, pauses, trips the breaker, ends with items waiting, or is stopped (split once, no shell; default: loop.notify)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l prompt-file -xka "(__fish_complete_path (commandline -ct))" -d 'text prepended to every prompt (default: loop.promptFile)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l pause-on-needs-human -d 'stop (exit 3) at the first item that needs a human'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l parallel -x -d 'run up to N agents at once, each in a worktree of its own (.forge/worktrees/<id>, branch forge/<id>), integrating each done item onto the branch as it finishes (default: loop.parallel)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l verify -x -d 'a check run in the item'"'"'s tree after its agent says done, before anything is committed: a failure is a failed attempt, retried with the failure in the prompt (repeatable; each split once, no shell; {report} stands for a JUnit XML file it writes; default: loop.verify)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l no-verify -d 'run no check this run, whatever loop.verify says'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l sandbox -xka "none bwrap auto" -d 'run each agent and check under bubblewrap: it may write its own tree (and the git parts a commit there needs), a private /tmp and its program'"'"'s own files, nothing else; auto: bwrap where it works here (default: loop.sandbox, none)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l sandbox-net -xka "shared none" -d 'a sandboxed agent'"'"'s network: the machine'"'"'s, or none (default: loop.sandboxNet, shared)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l sandbox-writable -x -d 'one more path a sandboxed agent may write (repeatable; default: loop.sandboxWritable)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l follow -d 'stream the agent'"'"'s output, whole lines in order (lines it cannot keep up with are skipped, and said)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l ndjson -d 'stream the journal as NDJSON'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l json -d 'print the run'"'"'s summary as JSON at the end (no progress lines)'
complete -c git-forge -n '_shtab_git_forge_using loop run' -l force -d 'launch despite the pre-launch check, a detached HEAD or an unborn branch (work already in the tree is left alone)'
complete -c git-forge -n '_shtab_git_forge_using loop run; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using loop; and test $_shtab_git_forge_npos -eq 0' -a stop -d 'ask a running loop to stop gracefully'
complete -c git-forge -n '_shtab_git_forge_using loop stop' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using loop stop' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using loop stop' -l json -d 'print {"requested": true|false}'
complete -c git-forge -n '_shtab_git_forge_using loop stop; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a status -d 'loop state, backlog summary, topology and lock liveness'
complete -c git-forge -n '_shtab_git_forge_using status' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using status' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using status' -l json -d 'print the status document'
complete -c git-forge -n '_shtab_git_forge_using status; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a watch -d 'a live view of a run: its agents, their last lines, the queue, costs'
complete -c git-forge -n '_shtab_git_forge_using watch' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using watch' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using watch' -l once -d 'print one frame as text and exit (for scripts)'
complete -c git-forge -n '_shtab_git_forge_using watch' -l json -d 'print one frame as JSON and exit'
complete -c git-forge -n '_shtab_git_forge_using watch' -l interval -x -d 'seconds between refreshes of the live view (default 1)'
complete -c git-forge -n '_shtab_git_forge_using watch; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a recover -d 'answer a stopped run'"'"'s questions and make the backlog resumable'
complete -c git-forge -n '_shtab_git_forge_using recover' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using recover' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using recover' -l answer -xka "(__git_forge_answers)" -d 'answer a question by its cluster id (c003; c006 for one item) or one item by its id (repeatable); a merge conflict takes retry (on the new tip) or resolve (by hand)'
complete -c git-forge -n '_shtab_git_forge_using recover' -l defer -xka "(__git_forge_values answerable)" -d 'defer a question (c003) or one item (repeatable)'
complete -c git-forge -n '_shtab_git_forge_using recover' -l answers -xka "(__fish_complete_path (commandline -ct))" -d 'a YAML or JSON mapping of id to answer text, defer or cancel (retry or resolve for a merge conflict)'
complete -c git-forge -n '_shtab_git_forge_using recover' -l merge -xka "(__git_forge_values clusters)" -d 'treat these clusters (or the clusters of these items) as one question (repeatable; never splits)'
complete -c git-forge -n '_shtab_git_forge_using recover' -l plan -d 'print the questions and write nothing (for an agent host)'
complete -c git-forge -n '_shtab_git_forge_using recover' -l non-interactive -d 'never ask, even on a terminal: unanswered questions are deferred'
complete -c git-forge -n '_shtab_git_forge_using recover' -l yes -d 'record each answer typed at a prompt without showing it back for confirmation (as recover.confirmAnswers: false); a discard is still confirmed'
complete -c git-forge -n '_shtab_git_forge_using recover' -l no-commit -d 'do not commit recover'"'"'s own backlog change'
complete -c git-forge -n '_shtab_git_forge_using recover' -l actor -x -d 'recordedBy/appliedBy label (default git-forge@<host>)'
complete -c git-forge -n '_shtab_git_forge_using recover' -l json -d 'print the report as JSON'
complete -c git-forge -n '_shtab_git_forge_using recover; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a reconcile -d 'decide what happens to stranded work in the tree'
complete -c git-forge -n '_shtab_git_forge_using reconcile' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using reconcile' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using reconcile' -l commit -x -d 'commit the group'"'"'s paths ([forge] <id>: stranded work (reconciled))'
complete -c git-forge -n '_shtab_git_forge_using reconcile' -l stash -x -d 'stash exactly the group'"'"'s paths (onto the stash list, as git stash does)'
complete -c git-forge -n '_shtab_git_forge_using reconcile' -l discard -x -d 'discard the group'"'"'s paths (needs --confirm-discard; saved to refs/forge/discarded/<time> first)'
complete -c git-forge -n '_shtab_git_forge_using reconcile' -l confirm-discard -d 'the second, explicit confirmation a discard needs'
complete -c git-forge -n '_shtab_git_forge_using reconcile' -l leave -x -d 'leave the group as it is'
complete -c git-forge -n '_shtab_git_forge_using reconcile' -l integrate -x -d 'integrate item ITEM'"'"'s branch (forge/ITEM) onto the branch checked out: its commits replayed onto the tip, then a fast-forward; a conflict changes nothing'
complete -c git-forge -n '_shtab_git_forge_using reconcile' -l restore -xka "(__git_forge_discarded)" -d 'put back what a discard saved under REF'
complete -c git-forge -n '_shtab_git_forge_using reconcile' -l json -d 'print the report as JSON'
complete -c git-forge -n '_shtab_git_forge_using reconcile; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a backlog -d 'list and change backlog items (rauf runner contract)'
complete -c git-forge -n '_shtab_git_forge_using backlog' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using backlog; and test $_shtab_git_forge_npos -eq 0' -a list -d 'list items'
complete -c git-forge -n '_shtab_git_forge_using backlog list' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using backlog list' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using backlog list' -l status -xka "pending in_progress done blocked needs-human deferred" -d 'only items with status S (pending, in_progress, done, blocked, needs-human, deferred)'
complete -c git-forge -n '_shtab_git_forge_using backlog list' -l json -d 'print a bare array of item objects as JSON'
complete -c git-forge -n '_shtab_git_forge_using backlog list; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using backlog; and test $_shtab_git_forge_npos -eq 0' -a show -d 'show one item'
complete -c git-forge -n '_shtab_git_forge_using backlog show' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using backlog show' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using backlog show' -l json -d 'print the item as JSON'
complete -c git-forge -n '_shtab_git_forge_using backlog show; and test $_shtab_git_forge_npos -eq 0' -ka "(__git_forge_values items)" -d 'item id'
complete -c git-forge -n '_shtab_git_forge_using backlog; and test $_shtab_git_forge_npos -eq 0' -a add -d 'add an item'
complete -c git-forge -n '_shtab_git_forge_using backlog add' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using backlog add' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using backlog add' -l title -x -d 'the item'"'"'s title'
complete -c git-forge -n '_shtab_git_forge_using backlog add' -l type -xka "bug bugfix refactor feature chore test" -d 'bug, bugfix, refactor, feature, chore or test'
complete -c git-forge -n '_shtab_git_forge_using backlog add' -l priority -xka "1 2 3 4" -d '1 (highest) to 4'
complete -c git-forge -n '_shtab_git_forge_using backlog add' -l description -x -d 'what the item is about'
complete -c git-forge -n '_shtab_git_forge_using backlog add' -l ac -x -d 'an acceptance criterion (repeatable)'
complete -c git-forge -n '_shtab_git_forge_using backlog add' -l depends-on -x -d 'comma-separated ids of items this one depends on'
complete -c git-forge -n '_shtab_git_forge_using backlog add' -l notes -x -d 'free-form notes'
complete -c git-forge -n '_shtab_git_forge_using backlog add' -l json -d 'print the new item as JSON'
complete -c git-forge -n '_shtab_git_forge_using backlog add; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using backlog; and test $_shtab_git_forge_npos -eq 0' -a edit -d 'change an item'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -l title -x -d 'the item'"'"'s title'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -l type -xka "bug bugfix refactor feature chore test" -d 'bug, bugfix, refactor, feature, chore or test'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -l priority -xka "1 2 3 4" -d '1 (highest) to 4'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -l description -x -d 'what the item is about'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -l ac -x -d 'an acceptance criterion (repeatable)'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -l depends-on -x -d 'comma-separated ids of items this one depends on'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -l notes -x -d 'free-form notes'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -l status -xka "pending in_progress done blocked" -d 'new status (pending, in_progress, done, blocked)'
complete -c git-forge -n '_shtab_git_forge_using backlog edit' -l json -d 'print the changed item as JSON'
complete -c git-forge -n '_shtab_git_forge_using backlog edit; and test $_shtab_git_forge_npos -eq 0' -ka "(__git_forge_values items)" -d 'item id'
complete -c git-forge -n '_shtab_git_forge_using backlog; and test $_shtab_git_forge_npos -eq 0' -a answer -d 'answer a blocked item (blocked → pending, answer kept for the prompt)'
complete -c git-forge -n '_shtab_git_forge_using backlog answer' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using backlog answer' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using backlog answer' -l json -d 'print {"answered": ID, "status": "pending"} as JSON'
complete -c git-forge -n '_shtab_git_forge_using backlog answer; and test $_shtab_git_forge_npos -eq 0' -ka "(__git_forge_values blocked)" -d 'item id'
complete -c git-forge -n '_shtab_git_forge_using backlog; and test $_shtab_git_forge_npos -eq 0' -a unblock -d 'make blocked items pending (all of them without ID)'
complete -c git-forge -n '_shtab_git_forge_using backlog unblock' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using backlog unblock' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using backlog unblock' -l json -d 'print {"unblockedCount": N, "unblockedIds": [...]} as JSON'
complete -c git-forge -n '_shtab_git_forge_using backlog unblock; and test $_shtab_git_forge_npos -eq 0' -ka "(__git_forge_values blocked)" -d 'item id (default: every item)'
complete -c git-forge -n '_shtab_git_forge_using backlog; and test $_shtab_git_forge_npos -eq 0' -a done -d 'mark items done by hand'
complete -c git-forge -n '_shtab_git_forge_using backlog done' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using backlog done' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using backlog done' -l json -d 'print {"doneCount": N, "doneIds": [...]} as JSON'
complete -c git-forge -n '_shtab_git_forge_using backlog done; and test $_shtab_git_forge_npos -ge 0' -ka "(__git_forge_values items)" -d 'item id (3 for 003)'
complete -c git-forge -n '_shtab_git_forge_using backlog; and test $_shtab_git_forge_npos -eq 0' -a drop -d 'take items out of the backlog'
complete -c git-forge -n '_shtab_git_forge_using backlog drop' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using backlog drop' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using backlog drop' -l keep-dependents -d 'the items that depend on a dropped one stay, without that dependency (and may be selected)'
complete -c git-forge -n '_shtab_git_forge_using backlog drop' -s y -l yes -d 'drop without asking'
complete -c git-forge -n '_shtab_git_forge_using backlog drop' -l json -d 'print {"droppedCount": N, "droppedIds": [...], "detachedIds": [...]} as JSON'
complete -c git-forge -n '_shtab_git_forge_using backlog drop; and test $_shtab_git_forge_npos -ge 0' -ka "(__git_forge_values items)" -d 'item id (3 for 003)'
complete -c git-forge -n '_shtab_git_forge_using backlog; and test $_shtab_git_forge_npos -eq 0' -a topology -d 'dependency roots, depth, selectable, starvation, blocked clusters'
complete -c git-forge -n '_shtab_git_forge_using backlog topology' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using backlog topology' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using backlog topology' -l cluster -d 'group blocked items whose reasons are alike'
complete -c git-forge -n '_shtab_git_forge_using backlog topology' -s v -l verbose -d 'after feature-forge'"'"'s lines, explain them: what a starved backlog waits on, why a warning fired, shared tokens'
complete -c git-forge -n '_shtab_git_forge_using backlog topology' -l config -xka "(__fish_complete_path (commandline -ct))" -d 'a feature-forge forge.config.json whose loopRunner block names the runner to ask, instead of the project'"'"'s; no file at PATH means the defaults, as in feature-forge (a file that is not valid is refused)'
complete -c git-forge -n '_shtab_git_forge_using backlog topology' -l items-json -xka "(__fish_complete_path (commandline -ct))" -d 'read the item list from FILE (an array, or {"items": [...]})'
complete -c git-forge -n '_shtab_git_forge_using backlog topology' -l items-stdin -d 'read the item list from standard input'
complete -c git-forge -n '_shtab_git_forge_using backlog topology' -l json -d 'print the topology payload as JSON'
complete -c git-forge -n '_shtab_git_forge_using backlog topology; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a decision -d 'the decision record (forge-decisions.json)'
complete -c git-forge -n '_shtab_git_forge_using decision' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using decision; and test $_shtab_git_forge_npos -eq 0' -a record -d 'append a decision (one entry per --item)'
complete -c git-forge -n '_shtab_git_forge_using decision record' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using decision record' -l backlog-dir -xka "(__git_forge_values backlog-dirs)" -d 'the backlog directory (must exist; default: the project'"'"'s, as every command finds it: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using decision record' -l state-dir -x -d 'state dir name; an empty NAME is the backlog dir itself (default: loopRunner.stateDir, else .forge)'
complete -c git-forge -n '_shtab_git_forge_using decision record' -l config -xka "(__fish_complete_path (commandline -ct))" -d 'a feature-forge forge.config.json whose loopRunner.stateDir applies (default: ./forge.config.json, when there is one)'
complete -c git-forge -n '_shtab_git_forge_using decision record' -l json -d 'print the document as JSON'
complete -c git-forge -n '_shtab_git_forge_using decision record' -l item -xka "(__git_forge_values blocked)" -d 'backlog item id (repeatable: one entry per id, in order)'
complete -c git-forge -n '_shtab_git_forge_using decision record' -l question -x -d 'the needs-human question text'
complete -c git-forge -n '_shtab_git_forge_using decision record' -l answer -x -d 'the operator'"'"'s answer'
complete -c git-forge -n '_shtab_git_forge_using decision record' -l deferred -d 'record a deferral or cancel-early (answer: null)'
complete -c git-forge -n '_shtab_git_forge_using decision record' -l cluster -x -d 'clusterId shared by a consolidated answer'
complete -c git-forge -n '_shtab_git_forge_using decision record' -l actor -x -d 'recordedBy label (default git-forge@<host>)'
complete -c git-forge -n '_shtab_git_forge_using decision; and test $_shtab_git_forge_npos -eq 0' -a list -d 'print the record, or the unapplied decisions'
complete -c git-forge -n '_shtab_git_forge_using decision list' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using decision list' -l backlog-dir -xka "(__git_forge_values backlog-dirs)" -d 'the backlog directory (must exist; default: the project'"'"'s, as every command finds it: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using decision list' -l state-dir -x -d 'state dir name; an empty NAME is the backlog dir itself (default: loopRunner.stateDir, else .forge)'
complete -c git-forge -n '_shtab_git_forge_using decision list' -l config -xka "(__fish_complete_path (commandline -ct))" -d 'a feature-forge forge.config.json whose loopRunner.stateDir applies (default: ./forge.config.json, when there is one)'
complete -c git-forge -n '_shtab_git_forge_using decision list' -l json -d 'print the document as JSON'
complete -c git-forge -n '_shtab_git_forge_using decision list' -l unapplied -d 'only the latest entry per item whose appliedAt is null'
complete -c git-forge -n '_shtab_git_forge_using decision; and test $_shtab_git_forge_npos -eq 0' -a apply -d 'stamp an item'"'"'s latest decision as applied'
complete -c git-forge -n '_shtab_git_forge_using decision apply' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using decision apply' -l backlog-dir -xka "(__git_forge_values backlog-dirs)" -d 'the backlog directory (must exist; default: the project'"'"'s, as every command finds it: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using decision apply' -l state-dir -x -d 'state dir name; an empty NAME is the backlog dir itself (default: loopRunner.stateDir, else .forge)'
complete -c git-forge -n '_shtab_git_forge_using decision apply' -l config -xka "(__fish_complete_path (commandline -ct))" -d 'a feature-forge forge.config.json whose loopRunner.stateDir applies (default: ./forge.config.json, when there is one)'
complete -c git-forge -n '_shtab_git_forge_using decision apply' -l json -d 'print the document as JSON'
complete -c git-forge -n '_shtab_git_forge_using decision apply' -l item -xka "(__git_forge_values blocked)" -d 'the backlog item id'
complete -c git-forge -n '_shtab_git_forge_using decision apply' -l actor -x -d 'appliedBy label (default git-forge@<host>)'
complete -c git-forge -n '_shtab_git_forge_using decision; and test $_shtab_git_forge_npos -eq 0' -a revoke -d 'take back an answer: the item waits for a decision again'
complete -c git-forge -n '_shtab_git_forge_using decision revoke' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using decision revoke' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using decision revoke' -l actor -x -d 'recordedBy label (default git-forge@<host>)'
complete -c git-forge -n '_shtab_git_forge_using decision revoke' -l json -d 'print what was revoked, the item'"'"'s state and the new entry as JSON'
complete -c git-forge -n '_shtab_git_forge_using decision revoke; and test $_shtab_git_forge_npos -eq 0' -ka "(__git_forge_values revocable)" -d 'the item whose answer to take back'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a agents -d 'list the agent profiles: command, binary on PATH, version'
complete -c git-forge -n '_shtab_git_forge_using agents' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using agents' -l json -d 'print [{name, binary, path, version, versionText, verified, versionStatus, command, …}, …]'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a preflight -d 'stop a launch while a prior run'"'"'s work is stranded'
complete -c git-forge -n '_shtab_git_forge_using preflight' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using preflight' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using preflight' -l json -d 'print {"status": "ok"|"stop", "run": …, "paths": […]}'
complete -c git-forge -n '_shtab_git_forge_using preflight; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a hooks -d 'install the pre-launch hook for any launcher'
complete -c git-forge -n '_shtab_git_forge_using hooks' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using hooks; and test $_shtab_git_forge_npos -eq 0' -a install -d 'install the hook (chaining a foreign one)'
complete -c git-forge -n '_shtab_git_forge_using hooks install' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using hooks install' -l json -d 'print the hook state as JSON'
complete -c git-forge -n '_shtab_git_forge_using hooks install; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using hooks; and test $_shtab_git_forge_npos -eq 0' -a uninstall -d 'remove it, restoring what was there'
complete -c git-forge -n '_shtab_git_forge_using hooks uninstall' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using hooks uninstall' -l json -d 'print the hook state as JSON'
complete -c git-forge -n '_shtab_git_forge_using hooks uninstall; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using hooks; and test $_shtab_git_forge_npos -eq 0' -a status -d 'show where hooks live and what is installed'
complete -c git-forge -n '_shtab_git_forge_using hooks status' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using hooks status' -l json -d 'print the hook state as JSON'
complete -c git-forge -n '_shtab_git_forge_using hooks status; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a proc -d 'supervised processes: state, output, stop'
complete -c git-forge -n '_shtab_git_forge_using proc' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using proc; and test $_shtab_git_forge_npos -eq 0' -a list -d 'every supervised process'
complete -c git-forge -n '_shtab_git_forge_using proc list' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using proc list' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using proc list' -l json -d 'print a JSON array'
complete -c git-forge -n '_shtab_git_forge_using proc; and test $_shtab_git_forge_npos -eq 0' -a show -d 'one process'"'"'s manifest'
complete -c git-forge -n '_shtab_git_forge_using proc show' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using proc show' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using proc show' -l json -d 'print the manifest as JSON'
complete -c git-forge -n '_shtab_git_forge_using proc show; and test $_shtab_git_forge_npos -eq 0' -ka "(__git_forge_values handles)" -d 'a handle, a unique prefix of one (4+ characters) or an item id (its latest agent process)'
complete -c git-forge -n '_shtab_git_forge_using proc; and test $_shtab_git_forge_npos -eq 0' -a output -d 'a process'"'"'s output by cursor'
complete -c git-forge -n '_shtab_git_forge_using proc output' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using proc output' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using proc output' -l cursor -x -d 'raw byte offset to start at (default 0)'
complete -c git-forge -n '_shtab_git_forge_using proc output' -l limit -x -d 'raw bytes to read at most (default: everything retained; with --json, 32768 per document, whose next_cursor continues)'
complete -c git-forge -n '_shtab_git_forge_using proc output' -l base64 -d 'the raw bytes, base64-encoded (one line per read)'
complete -c git-forge -n '_shtab_git_forge_using proc output' -l follow -d 'keep printing until the process ended and all output is read'
complete -c git-forge -n '_shtab_git_forge_using proc output' -l json -d 'print the result object as JSON'
complete -c git-forge -n '_shtab_git_forge_using proc output; and test $_shtab_git_forge_npos -eq 0' -ka "(__git_forge_values handles)" -d 'a handle, a unique prefix of one (4+ characters) or an item id (its latest agent process)'
complete -c git-forge -n '_shtab_git_forge_using proc; and test $_shtab_git_forge_npos -eq 0' -a wait -d 'wait until processes end'
complete -c git-forge -n '_shtab_git_forge_using proc wait' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using proc wait' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using proc wait' -l timeout -x -d 'give up after this long (exit 1)'
complete -c git-forge -n '_shtab_git_forge_using proc wait' -l json -d 'print the manifests as JSON'
complete -c git-forge -n '_shtab_git_forge_using proc wait; and test $_shtab_git_forge_npos -ge 0' -ka "(__git_forge_values handles)" -d 'a handle, a unique prefix of one (4+ characters) or an item id (its latest agent process)'
complete -c git-forge -n '_shtab_git_forge_using proc; and test $_shtab_git_forge_npos -eq 0' -a stop -d 'stop a process and its whole tree'
complete -c git-forge -n '_shtab_git_forge_using proc stop' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using proc stop' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using proc stop' -l mode -xka "interrupt terminate kill" -d mode
complete -c git-forge -n '_shtab_git_forge_using proc stop' -l grace -x -d 'seconds between SIGTERM and SIGKILL (default: the supervisor'"'"'s)'
complete -c git-forge -n '_shtab_git_forge_using proc stop' -l json -d 'print the manifest as JSON'
complete -c git-forge -n '_shtab_git_forge_using proc stop; and test $_shtab_git_forge_npos -eq 0' -ka "(__git_forge_values handles)" -d 'a handle, a unique prefix of one (4+ characters) or an item id (its latest agent process)'
complete -c git-forge -n '_shtab_git_forge_using proc; and test $_shtab_git_forge_npos -eq 0' -a prune -d 'remove the processes of old runs'
complete -c git-forge -n '_shtab_git_forge_using proc prune' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using proc prune' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using proc prune' -s n -l dry-run -d 'only list what would be removed'
complete -c git-forge -n '_shtab_git_forge_using proc prune' -l json -d 'print what was (or would be) removed as JSON'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a config -d 'show the effective configuration and where each value came from'
complete -c git-forge -n '_shtab_git_forge_using config' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using config' -l backlog -xka "(__git_forge_values backlogs)" -d 'backlog directory, relative to the project root (default: config '"'"'backlog'"'"', else .forge)'
complete -c git-forge -n '_shtab_git_forge_using config' -l json -d 'print {KEY: {"value": V, "source": S}, ...}'
complete -c git-forge -n '_shtab_git_forge_using config; and test $_shtab_git_forge_npos -eq 0' -ka "(__fish_complete_directories)" -d 'project path (default: .)'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a demo -d 'watch the whole loop-and-recover lifecycle in a throwaway repository'
complete -c git-forge -n '_shtab_git_forge_using demo' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using demo' -l non-interactive -d 'answer the recovery'"'"'s question with a scripted answer'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a completion -d 'print a shell completion script (bash, zsh or fish)'
complete -c git-forge -n '_shtab_git_forge_using completion' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using completion; and test $_shtab_git_forge_npos -eq 0' -ka "bash zsh fish" -d 'bash, zsh or fish'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a version -d 'print the version'
complete -c git-forge -n '_shtab_git_forge_using version' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using version' -l json -d 'print {"version": "X.Y.Z"}'
complete -c git-forge -n '_shtab_git_forge_using; and test $_shtab_git_forge_npos -eq 0' -a help -d 'show the overview, or a command'"'"'s help'
complete -c git-forge -n '_shtab_git_forge_using help' -s h -l help -d 'show this help message and exit'
complete -c git-forge -n '_shtab_git_forge_using help; and test $_shtab_git_forge_npos -ge 0' -ka "init loop status watch recover reconcile backlog decision agents preflight hooks proc config demo completion version help" -d 'a command, and a verb of it'
