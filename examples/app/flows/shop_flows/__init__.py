"""The shop app's code workflows, shipped as a layer (ShopWorkflowsLayer) that Orbit's decider loads."""
