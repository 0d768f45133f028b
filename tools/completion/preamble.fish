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
