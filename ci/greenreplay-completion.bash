# ci/greenreplay-completion.bash - bash completion for the greenreplay command.
#
# Use it now:      source ci/greenreplay-completion.bash
# Install it:      copy it to $(pkg-config --variable=completionsdir bash-completion)/greenreplay
#                  (usually /usr/share/bash-completion/completions/greenreplay), or
#                  ~/.local/share/bash-completion/completions/greenreplay for one user.
#
# Completes the commands, each command's options, the values of --format,
# --color, --c-names, --rule, --profiler (built-in adapters, *.py), and file names: traces (*.grt) where a trace is
# expected, *.py for reduce's SCRIPT, any file after -o and --html/--junit.
# Keep it in step with `greenreplay COMMAND --help` (tests/integration/export.sh
# checks that every option listed here is accepted by the command's --help).

_greenreplay_opts() {
    case "$1" in
        record) echo "-o --output --times --root --max-size --ring --flush-signal --switches --switch-stacks --no-compress --manual --start-on --for --force --help" ;;
        check)  echo "--format --junit --html --quiet --color --stall --max-wait-us --in-memory --from --to --allow --strict-known --fail-on --help" ;;
        dump)   echo "--times --help" ;;
        stats)  echo "--format --help" ;;
        edit)   echo "--drop --chunk -o --output --help" ;;
        script) echo "--anonymize -o --output --quiet --help" ;;
        diff)   echo "--ignore --context --max --c-names --files --rename --quiet --color --in-memory --help" ;;
        reduce) echo "--python --rule -o --output --timeout --max-runs --workdir --keep --quiet --help" ;;
        export) echo "--format -o --output --view --times --no-times --no-check --help" ;;
        conform) echo "--profiler --list --python --json -o --output --keep --results --no-record --root --switches --help" ;;
        stall)  echo "--python --sampler --attach --idle --depth --reps --seconds --interval-us --json --help" ;;
    esac
}

_greenreplay() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null; then
        _init_completion -n = || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi
    local commands="record check dump stats edit script diff reduce export conform stall help"
    if [ "$cword" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    local cmd=${words[1]}
    if [ "$cmd" = help ]; then
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return
    fi
    # --opt=value forms
    case "$cur" in
        --color=*|--colour=*)
            COMPREPLY=($(compgen -W "auto always never" -- "${cur#*=}")); return ;;
    esac
    case "$prev" in
        --format)
            if [ "$cmd" = export ]; then
                COMPREPLY=($(compgen -W "chrome speedscope" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "text json" -- "$cur"))
            fi
            return ;;
        --view) COMPREPLY=($(compgen -W "all merged greenlets" -- "$cur")); return ;;
        --c-names) COMPREPLY=($(compgen -W "exact script any" -- "$cur")); return ;;
        --rule) COMPREPLY=($(compgen -W "imbalance blind_spot switch_consistency propagation callback_guard displaced unreached attribution" -- "$cur")); return ;;
        --fail-on) COMPREPLY=($(compgen -W "displaced attribution" -- "$cur")); return ;;
        --flush-signal|--start-on) COMPREPLY=($(compgen -W "USR1 USR2 HUP" -- "$cur")); return ;;
        --switches) COMPREPLY=($(compgen -W "passive callback" -- "$cur")); return ;;
        --python) COMPREPLY=($(compgen -c -- "$cur")); return ;;
        --profiler)
            COMPREPLY=($(compgen -W "cprofile profile yappi coverage coverage-py coverage-monitoring line_profiler" \
                -- "$cur") $(compgen -f -X '!*.py' -- "$cur"))
            return ;;
        -o|--output|--junit|--html|--times|--ignore|--root|--workdir|--json|--results)
            if [ "$prev" = --times ] && [ "$cmd" != export ]; then :; else
                COMPREPLY=($(compgen -f -- "$cur")); return
            fi ;;
        --drop|--context|--max|--max-size|--ring|--max-wait-us|--timeout|--max-runs) return ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$(_greenreplay_opts "$cmd")" -- "$cur"))
        return
    fi
    case "$cmd" in
        record|conform) COMPREPLY=($(compgen -f -- "$cur")) ;;
        reduce) COMPREPLY=($(compgen -f -X '!*.py' -- "$cur") $(compgen -d -- "$cur")) ;;
        *) COMPREPLY=($(compgen -f -X '!*.grt' -- "$cur") $(compgen -d -- "$cur")) ;;
    esac
}

complete -o filenames -F _greenreplay greenreplay
