import { fleetChart, fleetTable, runFleetScenario } from './fleet';

describe('fleet scenario', () => {
  it('a fleet breaker keeps most failing calls off the dependency; quorum 3 keeps one broken replica from opening the fleet', async () => {
    const result = await runFleetScenario();
    const [local, quorum1, quorum3] = result.outage;
    expect(local.calls).toBe(3516);
    expect([local.reachedFailing, quorum1.reachedFailing, quorum3.reachedFailing]).toEqual([100, 20, 35]);
    // Ten replicas probing every 10 s alone, against one probe for the fleet.
    expect([local.probes, quorum1.probes, quorum3.probes]).toEqual([60, 6, 6]);
    expect([local.allOpenAfterS, quorum1.allOpenAfterS, quorum3.allOpenAfterS]).toEqual([4.266, 0.41, 1.224]);
    expect(local.storeCommands).toBe(0);
    expect(quorum1.reachedFailing * 5).toBeLessThanOrEqual(local.reachedFailing);

    const [brokenLocal, broken1, broken3] = result.brokenReplica;
    expect(broken1.allOpenAfterS).toBe(0.41);
    expect(broken1.refusedHealthy).toBe(1280);
    expect(broken3.allOpenAfterS).toBeUndefined();
    expect(broken3.refusedHealthy).toBe(brokenLocal.refusedHealthy);
    expect(broken3.refused).toBe(brokenLocal.refused);
    expect(broken3.refused).toBe(600);

    const printed = fleetTable(result);
    expect(printed).toMatch(/local breakers\s+3516\s+100\s+1746\s+89\s+4\.3 s\s+60\s+0/);
    expect(printed).toMatch(/fleet, quorum 1\s+3516\s+20\s+1803\s+66\s+0\.4 s\s+6\s+45/);
    expect(printed).toMatch(/fleet, quorum 3\s+3516\s+10\s+600\s+10\s+never\s+6\s+16/);
    expect(fleetChart(result).match(/<polyline/g)).toHaveLength(3);
  });
});
