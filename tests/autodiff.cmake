# (filled in by the autodiff work)
