
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
