"""`roscope experiment`: repeatable stress experiments on a ROS system (docs/experiment.md).

    from roscope.experiment import config, runner, analysis
    exp = config.load("experiment.yaml")
    run_dir = runner.run(exp, "results/run1", resume=False)
    analysis.report(run_dir); analysis.compare("results/run1", "results/run2")
"""
