# bash completion for devtrace(1): commands, their options, trace files.
_devtrace() {
    local cur prev cmd i
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "run report fix show tensors transfers export rules --help" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    if [ "$cmd" = run ]; then
        # after PROG (or --), complete PROG's own arguments as files and commands
        for ((i = 2; i < COMP_CWORD; i++)); do
            case ${COMP_WORDS[i]} in
            -o | --output | --max-mb) ((i++)) ;;
            --) if [ $((i + 1)) -eq "$COMP_CWORD" ]; then COMPREPLY=($(compgen -c -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi; return ;;
            -*) ;;
            *) COMPREPLY=($(compgen -f -- "$cur")); return ;;
            esac
        done
        case $prev in
        -o | --output) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --max-mb) return ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "-o --output --overwrite --max-mb -q --quiet --help --" -- "$cur"))
        else
            COMPREPLY=($(compgen -c -- "$cur"))
        fi
        return
    fi
    case $prev in
    --format) COMPREPLY=($(compgen -W "chrome html" -- "$cur")); return ;;
    --device) COMPREPLY=($(compgen -W "cpu cuda cuda:0 cuda:1" -- "$cur")); return ;;
    -o) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    if [[ $cur == -* ]]; then
        local opts="--json --help"
        case $cmd in
        report) opts="--json --brief --all-frames --no-source --help" ;;
        fix) opts="--verify --run-recorded-command --root -o --help" ;;
        tensors) opts="--json --device --alive-at-error --help" ;;
        export) opts="--format -o --help" ;;
        esac
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    # trace files: *.db, and directories to descend into
    COMPREPLY=($(compgen -f -X '!*.db' -- "$cur") $(compgen -d -- "$cur"))
}
complete -o filenames -F _devtrace devtrace
