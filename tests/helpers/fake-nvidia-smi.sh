# fake-nvidia-smi.sh - sourced by the tests/helpers/fake-nvidia-smi-*
# scenarios: a stand-in for nvidia-smi that answers exactly the two queries
# `lockstep-check gpu` asks (any other argv is refused as nvidia-smi does,
# so a change of the query fields breaks the tests instead of passing).
#
# A scenario defines rows (prints the --query-gpu rows), optionally
# remap_rows, and may set EVENT_FIELD (default clocks_event_reasons; an
# old driver's scenario sets OLD_DRIVER=1 to refuse that name), then calls
# fake_main "$@".

BUSES="00000000:18:00.0 00000000:2A:00.0 00000000:3A:00.0 00000000:5D:00.0
00000000:9A:00.0 00000000:AB:00.0 00000000:BA:00.0 00000000:DB:00.0"

# bus N: the PCI bus id of GPU N (0-7)
bus() { echo $BUSES | cut -d' ' -f$(($1 + 1)); }

# row N [ECC_MODE UE RETIRED THERMAL BRAKE TEMP POWER]: one H100's row
row() {
    echo "$1, $(bus $1), GPU-3b8e1c2a-6f1d-4c5e-9a7b-1c2d3e4f5a6$1," \
        "${2:-Enabled}, ${3:-0}, ${4:-[N/A]}, ${5:-Not Active}," \
        "${6:-Not Active}, ${7:-3$1}, ${8:-71.2$1}"
}

healthy_rows() { for i in 0 1 2 3 4 5 6 7; do row $i; done; }
remap_rows() { for i in 0 1 2 3 4 5 6 7; do echo "$(bus $i), No, No"; done; }

gpu_query() {
    echo "--query-gpu=index,pci.bus_id,uuid,ecc.mode.current,ecc.errors.uncorrected.volatile.total,retired_pages.pending,$1.hw_thermal_slowdown,$1.hw_power_brake_slowdown,temperature.gpu,power.draw"
}

fake_main() {
    if [ "$2" != "--format=csv,noheader,nounits" ] || [ $# != 2 ]; then
        echo "Invalid combination of input arguments. Please run" \
            "'nvidia-smi -h' for help." >&2
        exit 2
    fi
    case "$1" in
    "$(gpu_query clocks_event_reasons)")
        if [ -n "$OLD_DRIVER" ]; then
            echo 'Field "clocks_event_reasons.hw_thermal_slowdown" is not a' \
                'valid field to query.'
            exit 2
        fi
        rows ;;
    "$(gpu_query clocks_throttle_reasons)")
        rows ;;
    --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure)
        remap_rows ;;
    *)
        echo "Field \"${1#*=}\" is not a valid field to query." >&2
        exit 2 ;;
    esac
}
