# bash completion for git-forge and `git forge` (with git's own bash completion loaded).
# Install: git forge completion bash > ~/.local/share/bash-completion/completions/git-forge
#   (or source this file from ~/.bashrc). pip also installs it, as
#   <prefix>/share/bash-completion/completions/git-forge.bash: bash-completion loads it
#   from there on first use for the /usr/local and ~/.local (--user) prefixes, and
#   (bash-completion 2.12 and later) for a virtual environment whose bin is on PATH.
# Generated from the argparse parser by tools/generate_docs.py (shtab); do not edit.

_shtab_git_forge_loop_subparsers=(run stop)
_shtab_git_forge_backlog_subparsers=(list show add edit answer unblock done drop topology)
_shtab_git_forge_decision_subparsers=(record list apply revoke)
_shtab_git_forge_hooks_subparsers=(install uninstall status)
_shtab_git_forge_proc_subparsers=(list show output wait stop prune)
_shtab_git_forge_subparsers=(init loop status watch recover reconcile backlog decision agents preflight hooks proc config demo completion version help)

_shtab_git_forge_init_option_strings=(-h --help --backlog --json)
_shtab_git_forge_loop_run_option_strings=(-h --help --backlog --agent --agent-arg --iterations --retries --timeout --idle-timeout --max-cost --max-tokens --max-duration --on-limit --fallback-agent --fallback-agent-arg --max-consecutive-failures --notify --prompt-file --pause-on-needs-human --parallel --verify --no-verify --sandbox --sandbox-net --sandbox-writable --follow --ndjson --json --force)
_shtab_git_forge_loop_stop_option_strings=(-h --help --backlog --json)
_shtab_git_forge_loop_option_strings=(-h --help)
_shtab_git_forge_status_option_strings=(-h --help --backlog --json)
_shtab_git_forge_watch_option_strings=(-h --help --backlog --once --json --interval)
_shtab_git_forge_recover_option_strings=(-h --help --backlog --answer --defer --answers --merge --plan --non-interactive --yes --no-commit --actor --json)
_shtab_git_forge_reconcile_option_strings=(-h --help --backlog --commit --stash --discard --confirm-discard --leave --integrate --restore --json)
_shtab_git_forge_backlog_list_option_strings=(-h --help --backlog --status --json)
_shtab_git_forge_backlog_show_option_strings=(-h --help --backlog --json)
_shtab_git_forge_backlog_add_option_strings=(-h --help --backlog --title --type --priority --description --ac --depends-on --notes --json)
_shtab_git_forge_backlog_edit_option_strings=(-h --help --backlog --title --type --priority --description --ac --depends-on --notes --status --json)
_shtab_git_forge_backlog_answer_option_strings=(-h --help --backlog --json)
_shtab_git_forge_backlog_unblock_option_strings=(-h --help --backlog --json)
_shtab_git_forge_backlog_done_option_strings=(-h --help --backlog --json)
_shtab_git_forge_backlog_drop_option_strings=(-h --help --backlog --keep-dependents -y --yes --json)
_shtab_git_forge_backlog_topology_option_strings=(-h --help --backlog --cluster -v --verbose --config --items-json --items-stdin --json)
_shtab_git_forge_backlog_option_strings=(-h --help)
_shtab_git_forge_decision_record_option_strings=(-h --help --backlog-dir --state-dir --config --json --item --question --answer --deferred --cluster --actor)
_shtab_git_forge_decision_list_option_strings=(-h --help --backlog-dir --state-dir --config --json --unapplied)
_shtab_git_forge_decision_apply_option_strings=(-h --help --backlog-dir --state-dir --config --json --item --actor)
_shtab_git_forge_decision_revoke_option_strings=(-h --help --backlog --actor --json)
_shtab_git_forge_decision_option_strings=(-h --help)
_shtab_git_forge_agents_option_strings=(-h --help --json)
_shtab_git_forge_preflight_option_strings=(-h --help --backlog --json)
_shtab_git_forge_hooks_install_option_strings=(-h --help --json)
_shtab_git_forge_hooks_uninstall_option_strings=(-h --help --json)
_shtab_git_forge_hooks_status_option_strings=(-h --help --json)
_shtab_git_forge_hooks_option_strings=(-h --help)
_shtab_git_forge_proc_list_option_strings=(-h --help --backlog --json)
_shtab_git_forge_proc_show_option_strings=(-h --help --backlog --json)
_shtab_git_forge_proc_output_option_strings=(-h --help --backlog --cursor --limit --base64 --follow --json)
_shtab_git_forge_proc_wait_option_strings=(-h --help --backlog --timeout --json)
_shtab_git_forge_proc_stop_option_strings=(-h --help --backlog --mode --grace --json)
_shtab_git_forge_proc_prune_option_strings=(-h --help --backlog -n --dry-run --json)
_shtab_git_forge_proc_option_strings=(-h --help)
_shtab_git_forge_config_option_strings=(-h --help --backlog --json)
_shtab_git_forge_demo_option_strings=(-h --help --non-interactive)
_shtab_git_forge_completion_option_strings=(-h --help)
_shtab_git_forge_version_option_strings=(-h --help --json)
_shtab_git_forge_help_option_strings=(-h --help)
_shtab_git_forge_option_strings=(-h --help --version --no-color)

_shtab_git_forge_init_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_init___backlog_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_loop_run_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_loop_run___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_loop_run___prompt_file_COMPGEN=_shtab_compgen_files
_shtab_git_forge_loop_stop_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_loop_stop___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_status_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_status___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_watch_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_watch___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_recover_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_recover___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_recover___answer_COMPGEN=_git_forge_answers
_shtab_git_forge_recover___defer_COMPGEN=_git_forge_answerable
_shtab_git_forge_recover___answers_COMPGEN=_shtab_compgen_files
_shtab_git_forge_recover___merge_COMPGEN=_git_forge_clusters
_shtab_git_forge_reconcile_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_reconcile___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_reconcile___restore_COMPGEN=_git_forge_discarded
_shtab_git_forge_backlog_list_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_backlog_list___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_backlog_show_pos_0_COMPGEN=_git_forge_items
_shtab_git_forge_backlog_show___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_backlog_add_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_backlog_add___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_backlog_edit_pos_0_COMPGEN=_git_forge_items
_shtab_git_forge_backlog_edit___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_backlog_answer_pos_0_COMPGEN=_git_forge_blocked
_shtab_git_forge_backlog_answer___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_backlog_unblock_pos_0_COMPGEN=_git_forge_blocked
_shtab_git_forge_backlog_unblock___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_backlog_done_pos_0_COMPGEN=_git_forge_items
_shtab_git_forge_backlog_done___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_backlog_drop_pos_0_COMPGEN=_git_forge_items
_shtab_git_forge_backlog_drop___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_backlog_topology_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_backlog_topology___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_backlog_topology___config_COMPGEN=_shtab_compgen_files
_shtab_git_forge_backlog_topology___items_json_COMPGEN=_shtab_compgen_files
_shtab_git_forge_decision_record___backlog_dir_COMPGEN=_git_forge_backlog_dirs
_shtab_git_forge_decision_record___config_COMPGEN=_shtab_compgen_files
_shtab_git_forge_decision_record___item_COMPGEN=_git_forge_blocked
_shtab_git_forge_decision_list___backlog_dir_COMPGEN=_git_forge_backlog_dirs
_shtab_git_forge_decision_list___config_COMPGEN=_shtab_compgen_files
_shtab_git_forge_decision_apply___backlog_dir_COMPGEN=_git_forge_backlog_dirs
_shtab_git_forge_decision_apply___config_COMPGEN=_shtab_compgen_files
_shtab_git_forge_decision_apply___item_COMPGEN=_git_forge_blocked
_shtab_git_forge_decision_revoke_pos_0_COMPGEN=_git_forge_revocable
_shtab_git_forge_decision_revoke___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_preflight_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_preflight___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_hooks_install_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_hooks_uninstall_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_hooks_status_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_proc_list___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_proc_show_pos_0_COMPGEN=_git_forge_handles
_shtab_git_forge_proc_show___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_proc_output_pos_0_COMPGEN=_git_forge_handles
_shtab_git_forge_proc_output___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_proc_wait_pos_0_COMPGEN=_git_forge_handles
_shtab_git_forge_proc_wait___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_proc_stop_pos_0_COMPGEN=_git_forge_handles
_shtab_git_forge_proc_stop___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_proc_prune___backlog_COMPGEN=_git_forge_backlogs
_shtab_git_forge_config_pos_0_COMPGEN=_shtab_compgen_dirs
_shtab_git_forge_config___backlog_COMPGEN=_git_forge_backlogs

_shtab_git_forge_loop_run___on_limit_choices=(wait stop fallback)
_shtab_git_forge_loop_run___sandbox_choices=(none bwrap auto)
_shtab_git_forge_loop_run___sandbox_net_choices=(shared none)
_shtab_git_forge_loop_pos_0_choices=(run stop)
_shtab_git_forge_backlog_list___status_choices=(pending in_progress done blocked needs-human deferred)
_shtab_git_forge_backlog_add___type_choices=(bug bugfix refactor feature chore test)
_shtab_git_forge_backlog_add___priority_choices=(1 2 3 4)
_shtab_git_forge_backlog_edit___type_choices=(bug bugfix refactor feature chore test)
_shtab_git_forge_backlog_edit___priority_choices=(1 2 3 4)
_shtab_git_forge_backlog_edit___status_choices=(pending in_progress done blocked)
_shtab_git_forge_backlog_pos_0_choices=(list show add edit answer unblock done drop topology)
_shtab_git_forge_decision_pos_0_choices=(record list apply revoke)
_shtab_git_forge_hooks_pos_0_choices=(install uninstall status)
_shtab_git_forge_proc_stop___mode_choices=(interrupt terminate kill)
_shtab_git_forge_proc_pos_0_choices=(list show output wait stop prune)
_shtab_git_forge_completion_pos_0_choices=(bash zsh fish)
_shtab_git_forge_help_pos_0_choices=(init loop status watch recover reconcile backlog decision agents preflight hooks proc config demo completion version help)
_shtab_git_forge_pos_0_choices=(init loop status watch recover reconcile backlog decision agents preflight hooks proc config demo completion version help)

_shtab_git_forge_init__h_nargs=0
_shtab_git_forge_init___help_nargs=0
_shtab_git_forge_init___json_nargs=0
_shtab_git_forge_loop_run__h_nargs=0
_shtab_git_forge_loop_run___help_nargs=0
_shtab_git_forge_loop_run___pause_on_needs_human_nargs=0
_shtab_git_forge_loop_run___no_verify_nargs=0
_shtab_git_forge_loop_run___follow_nargs=0
_shtab_git_forge_loop_run___ndjson_nargs=0
_shtab_git_forge_loop_run___json_nargs=0
_shtab_git_forge_loop_run___force_nargs=0
_shtab_git_forge_loop_stop__h_nargs=0
_shtab_git_forge_loop_stop___help_nargs=0
_shtab_git_forge_loop_stop___json_nargs=0
_shtab_git_forge_loop_pos_0_nargs=A...
_shtab_git_forge_loop__h_nargs=0
_shtab_git_forge_loop___help_nargs=0
_shtab_git_forge_status__h_nargs=0
_shtab_git_forge_status___help_nargs=0
_shtab_git_forge_status___json_nargs=0
_shtab_git_forge_watch__h_nargs=0
_shtab_git_forge_watch___help_nargs=0
_shtab_git_forge_watch___once_nargs=0
_shtab_git_forge_watch___json_nargs=0
_shtab_git_forge_recover__h_nargs=0
_shtab_git_forge_recover___help_nargs=0
_shtab_git_forge_recover___plan_nargs=0
_shtab_git_forge_recover___non_interactive_nargs=0
_shtab_git_forge_recover___yes_nargs=0
_shtab_git_forge_recover___no_commit_nargs=0
_shtab_git_forge_recover___json_nargs=0
_shtab_git_forge_reconcile__h_nargs=0
_shtab_git_forge_reconcile___help_nargs=0
_shtab_git_forge_reconcile___confirm_discard_nargs=0
_shtab_git_forge_reconcile___json_nargs=0
_shtab_git_forge_backlog_list__h_nargs=0
_shtab_git_forge_backlog_list___help_nargs=0
_shtab_git_forge_backlog_list___json_nargs=0
_shtab_git_forge_backlog_show__h_nargs=0
_shtab_git_forge_backlog_show___help_nargs=0
_shtab_git_forge_backlog_show___json_nargs=0
_shtab_git_forge_backlog_add__h_nargs=0
_shtab_git_forge_backlog_add___help_nargs=0
_shtab_git_forge_backlog_add___json_nargs=0
_shtab_git_forge_backlog_edit__h_nargs=0
_shtab_git_forge_backlog_edit___help_nargs=0
_shtab_git_forge_backlog_edit___json_nargs=0
_shtab_git_forge_backlog_answer__h_nargs=0
_shtab_git_forge_backlog_answer___help_nargs=0
_shtab_git_forge_backlog_answer___json_nargs=0
_shtab_git_forge_backlog_unblock__h_nargs=0
_shtab_git_forge_backlog_unblock___help_nargs=0
_shtab_git_forge_backlog_unblock___json_nargs=0
_shtab_git_forge_backlog_done_pos_0_nargs=+
_shtab_git_forge_backlog_done__h_nargs=0
_shtab_git_forge_backlog_done___help_nargs=0
_shtab_git_forge_backlog_done___json_nargs=0
_shtab_git_forge_backlog_drop_pos_0_nargs=+
_shtab_git_forge_backlog_drop__h_nargs=0
_shtab_git_forge_backlog_drop___help_nargs=0
_shtab_git_forge_backlog_drop___keep_dependents_nargs=0
_shtab_git_forge_backlog_drop__y_nargs=0
_shtab_git_forge_backlog_drop___yes_nargs=0
_shtab_git_forge_backlog_drop___json_nargs=0
_shtab_git_forge_backlog_topology__h_nargs=0
_shtab_git_forge_backlog_topology___help_nargs=0
_shtab_git_forge_backlog_topology___cluster_nargs=0
_shtab_git_forge_backlog_topology__v_nargs=0
_shtab_git_forge_backlog_topology___verbose_nargs=0
_shtab_git_forge_backlog_topology___items_stdin_nargs=0
_shtab_git_forge_backlog_topology___json_nargs=0
_shtab_git_forge_backlog_pos_0_nargs=A...
_shtab_git_forge_backlog__h_nargs=0
_shtab_git_forge_backlog___help_nargs=0
_shtab_git_forge_decision_record__h_nargs=0
_shtab_git_forge_decision_record___help_nargs=0
_shtab_git_forge_decision_record___json_nargs=0
_shtab_git_forge_decision_record___deferred_nargs=0
_shtab_git_forge_decision_list__h_nargs=0
_shtab_git_forge_decision_list___help_nargs=0
_shtab_git_forge_decision_list___json_nargs=0
_shtab_git_forge_decision_list___unapplied_nargs=0
_shtab_git_forge_decision_apply__h_nargs=0
_shtab_git_forge_decision_apply___help_nargs=0
_shtab_git_forge_decision_apply___json_nargs=0
_shtab_git_forge_decision_revoke__h_nargs=0
_shtab_git_forge_decision_revoke___help_nargs=0
_shtab_git_forge_decision_revoke___json_nargs=0
_shtab_git_forge_decision_pos_0_nargs=A...
_shtab_git_forge_decision__h_nargs=0
_shtab_git_forge_decision___help_nargs=0
_shtab_git_forge_agents__h_nargs=0
_shtab_git_forge_agents___help_nargs=0
_shtab_git_forge_agents___json_nargs=0
_shtab_git_forge_preflight__h_nargs=0
_shtab_git_forge_preflight___help_nargs=0
_shtab_git_forge_preflight___json_nargs=0
_shtab_git_forge_hooks_install__h_nargs=0
_shtab_git_forge_hooks_install___help_nargs=0
_shtab_git_forge_hooks_install___json_nargs=0
_shtab_git_forge_hooks_uninstall__h_nargs=0
_shtab_git_forge_hooks_uninstall___help_nargs=0
_shtab_git_forge_hooks_uninstall___json_nargs=0
_shtab_git_forge_hooks_status__h_nargs=0
_shtab_git_forge_hooks_status___help_nargs=0
_shtab_git_forge_hooks_status___json_nargs=0
_shtab_git_forge_hooks_pos_0_nargs=A...
_shtab_git_forge_hooks__h_nargs=0
_shtab_git_forge_hooks___help_nargs=0
_shtab_git_forge_proc_list__h_nargs=0
_shtab_git_forge_proc_list___help_nargs=0
_shtab_git_forge_proc_list___json_nargs=0
_shtab_git_forge_proc_show__h_nargs=0
_shtab_git_forge_proc_show___help_nargs=0
_shtab_git_forge_proc_show___json_nargs=0
_shtab_git_forge_proc_output__h_nargs=0
_shtab_git_forge_proc_output___help_nargs=0
_shtab_git_forge_proc_output___base64_nargs=0
_shtab_git_forge_proc_output___follow_nargs=0
_shtab_git_forge_proc_output___json_nargs=0
_shtab_git_forge_proc_wait_pos_0_nargs=+
_shtab_git_forge_proc_wait__h_nargs=0
_shtab_git_forge_proc_wait___help_nargs=0
_shtab_git_forge_proc_wait___json_nargs=0
_shtab_git_forge_proc_stop__h_nargs=0
_shtab_git_forge_proc_stop___help_nargs=0
_shtab_git_forge_proc_stop___json_nargs=0
_shtab_git_forge_proc_prune__h_nargs=0
_shtab_git_forge_proc_prune___help_nargs=0
_shtab_git_forge_proc_prune__n_nargs=0
_shtab_git_forge_proc_prune___dry_run_nargs=0
_shtab_git_forge_proc_prune___json_nargs=0
_shtab_git_forge_proc_pos_0_nargs=A...
_shtab_git_forge_proc__h_nargs=0
_shtab_git_forge_proc___help_nargs=0
_shtab_git_forge_config__h_nargs=0
_shtab_git_forge_config___help_nargs=0
_shtab_git_forge_config___json_nargs=0
_shtab_git_forge_demo__h_nargs=0
_shtab_git_forge_demo___help_nargs=0
_shtab_git_forge_demo___non_interactive_nargs=0
_shtab_git_forge_completion__h_nargs=0
_shtab_git_forge_completion___help_nargs=0
_shtab_git_forge_version__h_nargs=0
_shtab_git_forge_version___help_nargs=0
_shtab_git_forge_version___json_nargs=0
_shtab_git_forge_help_pos_0_nargs='*'
_shtab_git_forge_help__h_nargs=0
_shtab_git_forge_help___help_nargs=0
_shtab_git_forge_pos_0_nargs=A...
_shtab_git_forge__h_nargs=0
_shtab_git_forge___help_nargs=0
_shtab_git_forge___version_nargs=0
_shtab_git_forge___no_color_nargs=0


# Custom Preamble
# Dynamic values (item ids, clusters, process handles, backlog dirs) come from
# `git-forge __complete KIND`, which reads the project's files and answers in milliseconds.
# $1: the kind; $2: the word being completed. A --backlog/--backlog-dir already on the
# line is passed on, so the values come from the backlog the command will act on.
_git_forge_values() {
  local kind=$1 cur=$2 i=1 word value
  local -a location=()
  while ((i < COMP_CWORD)); do
    word=${COMP_WORDS[i]}
    case $word in
      --backlog | --backlog-dir)
        ((i + 1 < COMP_CWORD)) || break
        value=${COMP_WORDS[i + 1]}
        if [[ $value == = ]]; then
          ((i + 2 < COMP_CWORD)) || break
          value=${COMP_WORDS[i + 2]}
        fi
        location+=("$word" "$value")
        ;;
      --backlog=* | --backlog-dir=*)
        location+=("${word%%=*}" "${word#*=}")
        ;;
    esac
    ((i++))
  done
  while IFS= read -r value; do
    [[ $value == "$cur"* ]] && printf '%s\n' "$value"
  done < <(command git-forge __complete "$kind" "${location[@]}" 2>/dev/null)
}
_git_forge_items() { _git_forge_values items "$1"; }
_git_forge_blocked() { _git_forge_values blocked "$1"; }
_git_forge_answerable() { _git_forge_values answerable "$1"; }
_git_forge_clusters() { _git_forge_values clusters "$1"; }
_git_forge_revocable() { _git_forge_values revocable "$1"; }
_git_forge_handles() { _git_forge_values handles "$1"; }
_git_forge_backlogs() { _git_forge_values backlogs "$1"; }
_git_forge_backlog_dirs() { _git_forge_values backlog-dirs "$1"; }
# recover --answer ID=TEXT: complete the ID and the "=" (no space follows, see below).
# After the "=" comes free text: nothing to offer. (bash itself splits the word at "=",
# so a candidate offered there would be appended after it: 006=006=.)
_git_forge_answers() {
  local value
  [[ $1 == *=* ]] && return 0
  while IFS= read -r value; do printf '%s=\n' "$value"; done < <(_git_forge_values answerable "$1")
}
# Refs a discard saved (reconcile --restore), straight from git.
_git_forge_discarded() {
  command git for-each-ref --format='%(refname)' "refs/forge/discarded/" 2>/dev/null |
    while IFS= read -r value; do [[ $value == "$1"* ]] && printf '%s\n' "$value"; done
}
# End Custom Preamble

# $1=COMP_WORDS[1]
_shtab_compgen_files() {
  compgen -f -- $1  # files
}

# $1=COMP_WORDS[1]
_shtab_compgen_dirs() {
  compgen -d -- $1  # recurse into subdirs
}

# $1=COMP_WORDS[1]
_shtab_replace_nonword() {
  echo "${1//[^[:word:]]/_}"
}

# set default values (called for the initial parser & any subparsers)
_set_parser_defaults() {
  local subparsers_var="${prefix}_subparsers[@]"
  sub_parsers=${!subparsers_var-}

  local current_option_strings_var="${prefix}_option_strings[@]"
  current_option_strings=${!current_option_strings_var}

  completed_positional_actions=0

  _set_new_action "pos_$completed_positional_actions" true
}

# $1=action identifier
# $2=positional action (bool)
# set all identifiers for an action's parameters
_set_new_action() {
  current_action="${prefix}_$(_shtab_replace_nonword $1)"

  local current_action_compgen_var=${current_action}_COMPGEN
  current_action_compgen="${!current_action_compgen_var-}"

  local current_action_choices_var="${current_action}_choices[@]"
  current_action_choices="${!current_action_choices_var-}"

  local current_action_nargs_var="${current_action}_nargs"
  if [ -n "${!current_action_nargs_var-}" ]; then
    current_action_nargs="${!current_action_nargs_var}"
  else
    current_action_nargs=1
  fi

  current_action_args_start_index=$(( $word_index + 1 - $pos_only ))

  current_action_is_positional=$2
}

# Notes:
# `COMPREPLY`: what will be rendered after completion is triggered
# `completing_word`: currently typed word to generate completions for
# `${!var}`: evaluates the content of `var` and expand its content as a variable
#     hello="world"
#     x="hello"
#     ${!x} -> ${hello} -> "world"
_shtab_git_forge() {
  local completing_word="${COMP_WORDS[COMP_CWORD]}"
  local previous_word="${COMP_WORDS[COMP_CWORD-1]}"
  local completed_positional_actions
  local current_action
  local current_action_args_start_index
  local current_action_choices
  local current_action_compgen
  local current_action_is_positional
  local current_action_nargs
  local current_option_strings
  local sub_parsers
  COMPREPLY=()

  local prefix=_shtab_git_forge
  local word_index=0
  local pos_only=0 # "--" delimiter not encountered yet
  _set_parser_defaults
  word_index=1

  # determine what arguments are appropriate for the current state
  # of the arg parser
  while [ $word_index -ne $COMP_CWORD ]; do
    local this_word="${COMP_WORDS[$word_index]}"

    if [[ $pos_only = 1 || " $this_word " != " -- " ]]; then
      if [[ -n $sub_parsers && " ${sub_parsers[@]} " == *" $this_word "* ]]; then
        # valid subcommand: add it to the prefix & reset the current action
        prefix="${prefix}_$(_shtab_replace_nonword $this_word)"
        _set_parser_defaults
      fi

      if [[ " ${current_option_strings[@]} " == *" $this_word "* ]]; then
        # a new action should be acquired (due to recognised option string or
        # no more input expected from current action);
        # the next positional action can fill in here
        _set_new_action $this_word false
      fi

      if [[ "$current_action_nargs" != "*" ]] && \
         [[ "$current_action_nargs" != "+" ]] && \
         [[ "$current_action_nargs" != "?" ]] && \
         [[ "$current_action_nargs" != *"..." ]] && \
         (( $word_index + 1 - $current_action_args_start_index - $pos_only >= \
            $current_action_nargs )); then
        $current_action_is_positional && let "completed_positional_actions += 1"
        _set_new_action "pos_$completed_positional_actions" true
      fi
    else
      pos_only=1 # "--" delimiter encountered
    fi

    let "word_index+=1"
  done

  # Generate the completions

  COMPREPLY=()
  if [[ $pos_only = 0 && "$completing_word" == -* &&
        ( -z "$current_action_compgen" || "$current_action_is_positional" = true ) ]]; then
    # optional argument started: use option strings
    while IFS= read -r line; do COMPREPLY+=("$line"); done < <(
      compgen -W "${current_option_strings[*]}" -- "$completing_word")
  elif [[ "$previous_word" =~ ^[0-9\&]*[\<\>]\>?$ ]]; then
    # handle redirection operators
    compopt -o filenames 2>/dev/null || : # bash>=4
    while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -f -- "$completing_word")
  else
    # use choices & compgen
    local action_compgen_word="$completing_word"
    # handle tab-completing in the middle of a line (#248 <- #116)
    [[ -n "$current_action_compgen" && "$completing_word" == -* ]] && action_compgen_word=""
    [ -n "$current_action_compgen" ] && {
      [[ "$current_action_compgen" =~ _(file|dir|glob|FILE|DIR|GLOB)|File|Dir|Glob ]] &&
        compopt -o filenames 2>/dev/null || : # bash>=4
      while IFS= read -r line; do COMPREPLY+=("$line"); done < <(
        "$current_action_compgen" "$action_compgen_word")
    }
    while IFS= read -r line; do COMPREPLY+=("$line"); done < <(
      compgen -W "${current_action_choices[*]}" -- "$completing_word")
  fi

  if [[ ${#COMPREPLY[@]} = 0 ]]; then
    # native fallback matches are not necessarily filenames (e.g. variables)
    compopt +o filenames 2>/dev/null || : # bash>=4
  fi

  return 0
}

# A space after a whole word, none after ID= (recover --answer ID=TEXT). Nothing to
# offer (a command's last argument typed, free text) is nothing: not the file names
# bash's -o default would fall back to (git's completion registers git with it too).
_git_forge_spacing() {
  local candidate
  ((${#COMPREPLY[@]})) || { compopt +o default +o bashdefault 2>/dev/null; return 0; }
  for candidate in "${COMPREPLY[@]}"; do
    [[ $candidate == *= ]] || { compopt +o nospace 2>/dev/null; return 0; }
  done
  ((${#COMPREPLY[@]})) && compopt -o nospace 2>/dev/null
  return 0
}

# `git forge <TAB>`: git's completion calls _git_forge with its own words, cword and
# __git_cmd_idx (the index of "forge"); present the words after it as a git-forge line.
_git_forge() {
  local idx=${__git_cmd_idx:-1}
  local -a COMP_WORDS=(git-forge "${words[@]:idx+1}")
  local COMP_CWORD=$((cword - idx))
  _shtab_git_forge
  _git_forge_spacing
}

# `git-forge <TAB>`
_git_forge_command() {
  _shtab_git_forge
  _git_forge_spacing
}

complete -o bashdefault -o default -F _git_forge_command git-forge
