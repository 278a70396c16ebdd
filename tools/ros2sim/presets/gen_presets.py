#!/usr/bin/env python3
"""Writes the preset JSON files of this directory (run it after editing)."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def U(lo_us, hi_us):
    return {'dist': 'uniform', 'min_us': lo_us, 'max_us': hi_us}


def save(name, d):
    with open(os.path.join(HERE, name + '.json'), 'w') as f:
        json.dump(d, f, indent=1)
        f.write('\n')


def src_node(name, topic, period_ms, work=U(50, 100)):
    return {'name': name, 'publishers': [{'topic': topic}],
            'timers': [{'period_ms': period_ms, 'work': work, 'publish': [topic]}]}


def sink_node(name, topic, work=U(20, 60)):
    return {'name': name, 'subscriptions': [{'topic': topic, 'work': work}]}


# ---- message-flow analysis paper (Bedard et al.), Figs. 4, 5, 6
save('mfa_fig4_transport', {
    'description': 'Message-flow paper Fig. 4: transport link; 5 ms timer on /source publishes /topic_a, '
                   'received by /sink on another computer (2 hosts, host-b clock +2.5 ms, +40 ppm)',
    'hosts': [{'name': 'computer-a'}, {'name': 'computer-b', 'clock_offset_ns': 2500000, 'clock_drift_ppm': 40}],
    'processes': [
        {'name': 'source', 'host': 'computer-a', 'nodes': [src_node('source', '/topic_a', 5)]},
        {'name': 'sink', 'host': 'computer-b', 'nodes': [sink_node('sink', '/topic_a')]},
    ]})

save('mfa_fig5_direct', {
    'description': 'Message-flow paper Fig. 5: direct one-to-one causal links: /source (5 ms) -> /topic_a -> '
                   '/sync_one_to_one -> /topic_b -> /sink',
    'processes': [
        {'name': 'source', 'nodes': [src_node('source', '/topic_a', 5)]},
        {'name': 'one_to_one', 'nodes': [{'name': 'sync_one_to_one', 'publishers': [{'topic': '/topic_b'}],
                                          'subscriptions': [{'topic': '/topic_a', 'work': U(100, 300),
                                                             'publish': ['/topic_b']}]}]},
        {'name': 'sink', 'nodes': [sink_node('sink', '/topic_b')]},
    ]})

save('mfa_fig6a_periodic_async', {
    'description': 'Message-flow paper Fig. 6a: periodic asynchronous link: two /source nodes publish /topic_a '
                   '(5 ms) and /topic_b (7 ms); /periodic_async_n_to_m caches both and publishes /topic_c '
                   'from a 10 ms timer; /sink receives it',
    'processes': [
        {'name': 'sources', 'nodes': [src_node('source_a', '/topic_a', 5), src_node('source_b', '/topic_b', 7)]},
        {'name': 'periodic_async', 'nodes': [{
            'name': 'periodic_async_n_to_m', 'publishers': [{'topic': '/topic_c'}],
            'subscriptions': [{'topic': '/topic_a', 'work': U(20, 50)}, {'topic': '/topic_b', 'work': U(20, 50)}],
            'timers': [{'period_ms': 10, 'work': U(100, 300), 'inputs': ['/topic_a', '/topic_b'],
                        'publish': ['/topic_c']}]}]},
        {'name': 'sink', 'nodes': [sink_node('sink', '/topic_c')]},
    ]})

save('mfa_fig6b_partial_sync', {
    'description': 'Message-flow paper Fig. 6b: partial synchronous link: /topic_a (5 ms) and /topic_b (7 ms) '
                   'into /partial_sync_n_to_m, which publishes /topic_c once both caches are filled, then '
                   'resets them; /sink receives it',
    'processes': [
        {'name': 'sources', 'nodes': [src_node('source_a', '/topic_a', 5), src_node('source_b', '/topic_b', 7)]},
        {'name': 'partial_sync', 'nodes': [{
            'name': 'partial_sync_n_to_m', 'publishers': [{'topic': '/topic_c'}],
            'subscriptions': [{'topic': '/topic_a', 'work': U(50, 150)}, {'topic': '/topic_b', 'work': U(50, 150)}],
            'sync_groups': [{'inputs': ['/topic_a', '/topic_b'], 'publish': ['/topic_c']}]}]},
        {'name': 'sink', 'nodes': [sink_node('sink', '/topic_c')]},
    ]})

# ---- Autoware reference system (ros-realtime/reference-system, autoware_reference_system)
# Node/topic graph of autoware_system_builder.hpp: every node publishes a topic named after itself.
SENSORS = [('FrontLidarDriver', 100), ('RearLidarDriver', 100), ('PointCloudMap', 100), ('Visualizer', 100),
           ('Lanelet2Map', 100), ('EuclideanClusterSettings', 25)]
TRANSFORMS = [('PointsTransformerFront', 'FrontLidarDriver'), ('PointsTransformerRear', 'RearLidarDriver'),
              ('VoxelGridDownsampler', 'PointCloudFusion'), ('PointCloudMapLoader', 'PointCloudMap'),
              ('RayGroundFilter', 'PointCloudFusion'), ('ObjectCollisionEstimator', 'EuclideanClusterDetector'),
              ('MPCController', 'BehaviorPlanner'), ('ParkingPlanner', 'Lanelet2MapLoader'),
              ('LanePlanner', 'Lanelet2MapLoader')]
FUSIONS = [('PointCloudFusion', 'PointsTransformerFront', 'PointsTransformerRear'),
           ('NDTLocalizer', 'VoxelGridDownsampler', 'PointCloudMapLoader'),
           ('VehicleInterface', 'MPCController', 'BehaviorPlanner'),
           ('Lanelet2GlobalPlanner', 'Visualizer', 'NDTLocalizer'),
           ('Lanelet2MapLoader', 'Lanelet2Map', 'Lanelet2GlobalPlanner')]
CYCLIC = ('BehaviorPlanner', 100, ['ObjectCollisionEstimator', 'NDTLocalizer', 'Lanelet2GlobalPlanner',
                                   'Lanelet2MapLoader', 'ParkingPlanner', 'LanePlanner'])
INTERSECTION = ('EuclideanClusterDetector', [('RayGroundFilter', 'EuclideanClusterDetector'),
                                             ('EuclideanClusterSettings', 'EuclideanIntersection')])
COMMANDS = [('VehicleDBWSystem', 'VehicleInterface'), ('IntersectionOutput', 'EuclideanIntersection')]


def autoware_nodes():
    n = {}
    for name, period in SENSORS:
        n[name] = src_node(name, name, period, U(50, 150))
    for name, inp in TRANSFORMS:
        n[name] = {'name': name, 'publishers': [{'topic': name}],
                   'subscriptions': [{'topic': inp, 'work': U(1500, 2500), 'publish': [name]}]}
    for name, a, b in FUSIONS:
        n[name] = {'name': name, 'publishers': [{'topic': name}],
                   'subscriptions': [{'topic': a, 'work': U(800, 1200)}, {'topic': b, 'work': U(800, 1200)}],
                   'sync_groups': [{'inputs': [a, b], 'publish': [name]}]}
    name, period, ins = CYCLIC
    n[name] = {'name': name, 'publishers': [{'topic': name}],
               'subscriptions': [{'topic': t, 'work': U(20, 50)} for t in ins],
               'timers': [{'period_ms': period, 'work': U(400, 600), 'inputs': ins, 'publish': [name]}]}
    name, conns = INTERSECTION
    n[name] = {'name': name, 'publishers': [{'topic': o} for _, o in conns],
               'subscriptions': [{'topic': i, 'work': U(1500, 2500), 'publish': [o]} for i, o in conns]}
    for name, inp in COMMANDS:
        n[name] = sink_node(name, inp, U(20, 60))
    return n


nodes = autoware_nodes()
save('autoware_reference_system', {
    'description': 'Autoware reference system (ros-realtime/reference-system): 6 sensors -> transforms -> '
                   'fusions -> cyclic BehaviorPlanner -> VehicleInterface -> VehicleDBWSystem, plus the '
                   'EuclideanClusterDetector intersection; all nodes in one process on a single-threaded '
                   'executor (autoware_default_singlethreaded)',
    'processes': [{'name': 'autoware', 'nodes': list(nodes.values())}]})

GROUPS = {'sensors': [s for s, _ in SENSORS],
          'perception': ['PointsTransformerFront', 'PointsTransformerRear', 'PointCloudFusion', 'RayGroundFilter',
                         'EuclideanClusterDetector', 'ObjectCollisionEstimator', 'VoxelGridDownsampler',
                         'PointCloudMapLoader', 'NDTLocalizer'],
          'planning': ['Lanelet2GlobalPlanner', 'Lanelet2MapLoader', 'ParkingPlanner', 'LanePlanner',
                       'BehaviorPlanner'],
          'control': ['MPCController', 'VehicleInterface', 'VehicleDBWSystem', 'IntersectionOutput']}
assert sorted(sum(GROUPS.values(), [])) == sorted(nodes)
save('autoware_reference_system_mp', {
    'description': 'Autoware reference system graph split over 4 processes (sensors, perception on a '
                   '2-thread multi-threaded executor, planning, control); used for --scale benchmarks',
    'processes': [
        {'name': 'sensors', 'nodes': [nodes[x] for x in GROUPS['sensors']]},
        {'name': 'perception', 'executor': {'type': 'multi', 'threads': 2},
         'nodes': [nodes[x] for x in GROUPS['perception']]},
        {'name': 'planning', 'nodes': [nodes[x] for x in GROUPS['planning']]},
        {'name': 'control', 'nodes': [nodes[x] for x in GROUPS['control']]}]})

# ---- intra-process variant of a small pipeline (ring-buffer events on jazzy/rolling)
save('intra_process_pipeline', {
    'description': 'Intra-process pipeline in one process (use_intra_process_comms): /camera (20 ms) -> '
                   '/filter -> /detector, plus an inter-process /monitor of /filtered',
    'processes': [
        {'name': 'pipeline', 'intra_process': True, 'nodes': [
            src_node('camera', '/image', 20),
            {'name': 'filter', 'publishers': [{'topic': '/filtered'}],
             'subscriptions': [{'topic': '/image', 'depth': 5, 'work': U(200, 400), 'publish': ['/filtered']}]},
            sink_node('detector', '/filtered', U(300, 500))]},
        {'name': 'monitor', 'nodes': [sink_node('monitor', '/filtered')]}]})
