"""shaperlib: what the project's own tests and tools share to run shaperd.

    daemon   shaperd's command line (EAL options, config, exit counters), a
             child whose output a thread collects, starting and stopping it
    control  the control socket client (one JSON request line, one reply line)
    stats    the accounting identity of a `stats` result or an exit report
    checks   the ok/FAIL check list of a test script, and small statistics
    autorate the bed's autorate run (tools/testbed/autorate.py), for the e2e tests
    frames   Ethernet/IP test frames
    pcap     pcap files: the one writer and reader
    units    rates, sizes and times in the config's grammar (units.c's)
    net      veth pairs

Scripts find it from their own path: tests/*/x.py and tools/*/x.py put the
tools directory on sys.path before importing it:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "tools"))
    from shaperlib import start_shaperd, Control
"""
from .autorate import check_goodput_of_sent, run_autorate, split_extra  # noqa: F401
from .checks import check, failures, percentile, slope  # noqa: F401
from .control import Control, ControlError, request  # noqa: F401
from .daemon import (NOBODY, Proc, asan_build, eal_args, favour_session,  # noqa: F401
                     pcap_ports_with, rss_kb, shape_per_subscriber, shaperd_argv, start_logged,
                     start_shaperd,
                     stop_process, worker_lcores, workers_option, write_config)
from .frames import ip_checksum, ip_frame, numbered_frame  # noqa: F401
from .net import make_veth  # noqa: F401
from .pcap import PcapWriter, read_pcap, write_pcap  # noqa: F401
from .stats import accounting_errors, check_accounting  # noqa: F401
