# Dynamic values (item ids, clusters, process handles, backlog dirs) come from
# `git-forge __complete KIND --describe`, which reads the project's files and answers in
# milliseconds. A --backlog/--backlog-dir already on the line is passed on.
_git_forge_values() {  # KIND LABEL [compadd options]
  local kind=$1 label=$2 i
  local -a location values
  for (( i = 2; i < CURRENT; i++ )); do
    case $words[i] in
      (--backlog|--backlog-dir) (( i + 1 < CURRENT )) && location+=($words[i] "$words[i+1]") ;;
      (--backlog=*|--backlog-dir=*) location+=(${words[i]%%=*} "${words[i]#*=}") ;;
    esac
  done
  values=(${(f)"$(command git-forge __complete $kind --describe $location 2>/dev/null)"})
  values=(${values//:/\\:})
  values=(${values/$'\t'/:})
  _describe -t git-forge-$kind $label values "${@[3,-1]}"
}
_git_forge_items() { _git_forge_values items 'item id' }
_git_forge_blocked() { _git_forge_values blocked 'blocked item id' }
_git_forge_answerable() { _git_forge_values answerable 'item or cluster id' }
_git_forge_answers() { _git_forge_values answerable 'item or cluster id' -S = }
_git_forge_clusters() { _git_forge_values clusters 'cluster id' }
_git_forge_revocable() { _git_forge_values revocable 'answered item id' }
_git_forge_handles() { _git_forge_values handles 'item id or process handle' }
_git_forge_backlogs() { _git_forge_values backlogs 'backlog directory' }
_git_forge_backlog_dirs() { _git_forge_values backlog-dirs 'backlog directory' }
_git_forge_discarded() {
  local -a refs
  refs=(${(f)"$(command git for-each-ref --format='%(refname)' refs/forge/discarded/ 2>/dev/null)"})
  compadd -a refs
}
