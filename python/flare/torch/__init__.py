"""PyTorch integration: the distributed backend "flare" and a DDP comm hook.

    import flare.torch                      # registers the backend
    dist.init_process_group("flare", ...)   # allreduce through the switch

allreduce (SUM, MIN, MAX, PRODUCT, BAND/BOR/BXOR on integers, AVG as SUM
then a division) goes through the Flare switch named by FLARE_SWITCH;
broadcast, allgather, barrier and everything else go through an inner gloo
group, as do dtypes the switch lacks (bool, uint8, complex). When the
switch refuses a job or cannot be reached, the ranks agree to fall back to
gloo for good, with one warning (FLARE_FALLBACK=gloo, the default) or
raise (FLARE_FALLBACK=error). docs/PYTORCH.md has the configuration.
"""

from .config import Config
from .reducer import Reducer
from .backend import ProcessGroupFlare, register
from .hook import HookState, allreduce_hook

register()

__all__ = ["Config", "Reducer", "ProcessGroupFlare", "register", "HookState", "allreduce_hook"]
