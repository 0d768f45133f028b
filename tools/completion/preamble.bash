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
