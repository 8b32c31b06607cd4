"""The paper being reproduced (Fernandez et al., arXiv 2411.13055): its stated numbers and the
paper setup's constants (:mod:`.values`, no simulator code), the setup simulated
(:mod:`.setup`) and its claims reproduced (:mod:`.claims`)."""
